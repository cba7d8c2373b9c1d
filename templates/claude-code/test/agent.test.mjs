// Runs the agent under a real Backchannel broker with a stand-in `claude` CLI that prints a few
// recorded stream-json lines, so the test needs neither the CLI nor an account. `npm test`.
// To try the real CLI: npx backchannel run --input '{"prompt":"Say hi"}' -- node agent.mjs
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { TaskBroker, silentLogger } from 'backchannel-agents';

const here = fileURLToPath(new URL('..', import.meta.url));
const RECORDED = `{"type":"system","subtype":"init","session_id":"s-1","model":"test-model","cwd":"."}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hello from the stand-in"}]},"session_id":"s-1"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":12,"num_turns":1,"result":"Hello from the stand-in","session_id":"s-1","total_cost_usd":0.001,"usage":{"input_tokens":3,"output_tokens":4}}`;

test('the agent turns the CLI stream into progress and a result', async () => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'claude-code-test-'));
  const standIn = path.join(scratch, 'claude');
  writeFileSync(standIn, `#!/usr/bin/env node\nprocess.stdout.write(${JSON.stringify(RECORDED + '\n')});\n`);
  chmodSync(standIn, 0o755);
  const broker = new TaskBroker({ logger: silentLogger });
  try {
    const task = broker.submit({
      command: 'node',
      args: ['agent.mjs'],
      cwd: here,
      input: { prompt: 'Say hi' },
      env: { CLAUDE_BIN: standIn },
      timeoutMs: 60_000,
    });
    const partials = [];
    task.on('update', (update) => update.kind === 'partial' && partials.push(update.payload.data));
    const result = await task.result;
    assert.equal(result.data.text, 'Hello from the stand-in');
    assert.equal(result.meta.session_id, 's-1');
    assert.equal(result.meta.model_used, 'test-model');
    assert.equal(partials[0].phase, 'init');
  } finally {
    await broker.close();
    rmSync(scratch, { recursive: true, force: true });
  }
});
