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
    const task = broker.submit({ command: 'node', args: ['agent.mjs'], cwd: here, input: { path: '.' }, timeoutMs: 60_000 });
    const result = await task.result;
    assert.equal(result.status, 'success');
    assert.ok(result.data.files >= 1);
    // The file list comes back as an attachment: a string, one path per line.
    const list = result.attachments.find((a) => a.name === 'files.txt');
    assert.equal(list.content.split('\n').length, result.data.files);
    assert.ok(list.content.split('\n').includes('agent.mjs'));
  } finally {
    await broker.close();
  }
});
