// Runs the agent under a real Backchannel broker, the way `backchannel run` and the panel do.
// `npm test` (node --test). Change the input and the checks when you change the agent.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { TaskBroker, silentLogger } from 'backchannel-agents';

const here = fileURLToPath(new URL('..', import.meta.url));

test('the agent surveys its own directory', async () => {
  const broker = new TaskBroker({ logger: silentLogger });
  try {
    const task = broker.submit({ command: 'agent.ts', args: [], cwd: here, input: { path: '.' }, timeoutMs: 60_000 });
    const result = await task.result;
    assert.equal(result.status, 'success');
    assert.ok(result.data.files >= 1);
  } finally {
    await broker.close();
  }
});
