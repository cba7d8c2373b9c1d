/**
 * How long an ended background response is kept (`background_keep_ms`), on a fake clock: retrievable
 * up to the keep time after the task ended, a 404 one millisecond later — through the official
 * `openai` Node SDK, on a real gateway and a stand-in agent. Nothing waits on real time for it.
 */
import OpenAI from 'openai';
import { expect, test } from 'vitest';
import { tempDir, waitFor } from '../../helpers/core.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { standinModels, startTestGateway } from '../helpers.js';

test('an ended response is retrievable for background_keep_ms after it ended, then it is a 404', async () => {
  const dir = tempDir('bc-gwkeep-');
  // The clock starts at the real time: the task's end is stamped by the broker, on the real one.
  const clock = new FakeClock(Date.now());
  const gateway = await startTestGateway({ models: standinModels(dir), background_keep_ms: 60_000 }, { dir, clock });
  const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: 'unused', maxRetries: 0 });
  const created = await openai.responses.create({ model: 'echo', input: 'kept a minute', background: true });
  await waitFor(async () => (await openai.responses.retrieve(created.id)).status === 'completed', 'the response to complete');
  const task = (await gateway.client.listTasks())[0]!;
  const endedAt = Date.parse(task.endedAt!);
  clock.advance(endedAt + 60_000 - clock.now());
  expect(await openai.responses.retrieve(created.id)).toMatchObject({ id: created.id, status: 'completed' });
  clock.advance(1);
  await expect(openai.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
});
