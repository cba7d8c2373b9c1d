// Runs the agent under a real Backchannel broker, the way `backchannel run` and the panel do.
// `npm test` (node --test). Change the input and the checks when you change the agent.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { TaskBroker, silentLogger } from 'backchannel-agents';

const here = fileURLToPath(new URL('..', import.meta.url));

test('the agent counts the Python files of its directory and reports progress', async () => {
  const broker = new TaskBroker({ logger: silentLogger });
  try {
    const task = broker.submit({
      command: 'python3',
      args: ['agent.py'],
      cwd: here,
      input: { path: '.', extensions: ['.py'] },
      timeoutMs: 60_000,
    });
    const progress = [];
    task.on('update', (update) => update.kind === 'partial' && progress.push(update.progress));
    const result = await task.result;
    assert.equal(result.status, 'success');
    assert.ok(result.data.files >= 1, 'agent.py at least');
    assert.ok(result.data.lines > 0);
    assert.equal(progress.at(-1), 100);
  } finally {
    await broker.close();
  }
});
