// Runs the agent under a real Backchannel broker with a stand-in `codex` CLI that prints a few
// `codex exec --json` lines, so the test needs neither the CLI nor an account. `npm test`.
// To try the real CLI: npx backchannel run --worktree --input '{"prompt":"Say hi"}' -- node agent.mjs
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { TaskBroker, silentLogger } from 'backchannel-agents';

const here = fileURLToPath(new URL('..', import.meta.url));
// Lines of the real Codex 0.171.0 (the repository's test/fixtures/recordings/codex-exec-json.jsonl).
const RECORDED = `{"type":"thread.started","thread_id":"01a2333a-2fbb-7c73-8653-630cd7617b6d"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for \`fake-model\` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'npm test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'npm test'","aggregated_output":"ok\\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Hello from the stand-in"}}
{"type":"turn.completed","usage":{"input_tokens":420,"cached_input_tokens":20,"cache_write_input_tokens":0,"output_tokens":38,"reasoning_output_tokens":0}}`;

test('the agent turns the CLI stream into progress and a result', async () => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'codex-test-'));
  const standIn = path.join(scratch, 'codex');
  writeFileSync(standIn, `#!/usr/bin/env node\nprocess.stdout.write(${JSON.stringify(RECORDED + '\n')});\n`);
  chmodSync(standIn, 0o755);
  const broker = new TaskBroker({ logger: silentLogger });
  try {
    const task = broker.submit({
      command: 'node',
      args: ['agent.mjs'],
      cwd: here,
      input: { prompt: 'Say hi' },
      env: { CODEX_BIN: standIn },
      timeoutMs: 60_000,
    });
    const partials = [];
    task.on('update', (update) => update.kind === 'partial' && partials.push(update.payload.data));
    const result = await task.result;
    assert.equal(result.data.text, 'Hello from the stand-in');
    assert.equal(result.meta.session_id, '01a2333a-2fbb-7c73-8653-630cd7617b6d');
    assert.deepEqual(result.meta.token_usage, { input: 420, output: 38, total: 458, cache_read: 20, cache_creation: 0, reasoning: 0 });
    assert.equal(partials[0].phase, 'init');
    assert.ok(partials.some((p) => p.message === 'running npm test'));
  } finally {
    await broker.close();
    rmSync(scratch, { recursive: true, force: true });
  }
});
