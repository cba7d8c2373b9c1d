// Runs the agent under a real Backchannel broker against a tiny local stand-in for an
// OpenAI-compatible model (two scripted replies), so the test needs no API key. `npm test`.
import assert from 'node:assert/strict';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { TaskBroker, silentLogger } from 'backchannel-agents';

const here = fileURLToPath(new URL('..', import.meta.url));

function fakeModel(replies) {
  const server = http.createServer((req, res) => {
    req.resume().on('end', () => {
      const content = JSON.stringify(replies.shift() ?? { thought: 'out of script', action: null, answer: 'n/a' });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-test',
          object: 'chat.completion',
          created: 0,
          model: 'fake-model',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('the agent uses a tool, then answers, and reports model and token usage', async () => {
  const model = await fakeModel([
    { thought: 'look around', action: { name: 'list_dir', arguments: { path: '.' } } },
    { thought: 'done', action: null, answer: 'I saw agent.mjs' },
  ]);
  const broker = new TaskBroker({ logger: silentLogger });
  try {
    const task = broker.submit({
      command: 'node',
      args: ['agent.mjs'],
      cwd: here,
      input: { task: 'What files are here?' },
      env: { OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1`, OPENAI_API_KEY: 'test', OPENAI_MODEL: 'fake-model' },
      timeoutMs: 60_000,
    });
    const steps = [];
    task.on('update', (update) => update.kind === 'partial' && steps.push(update.payload.data));
    const result = await task.result;
    assert.equal(result.data.answer, 'I saw agent.mjs');
    assert.equal(steps[0].tool, 'list_dir');
    assert.deepEqual(result.meta.token_usage, { input: 20, output: 10, total: 30 });
    assert.equal(result.meta.model_used, 'fake-model');
  } finally {
    await broker.close();
    model.close();
  }
});
