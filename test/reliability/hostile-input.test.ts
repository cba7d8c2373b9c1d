/**
 * Fault table, "bad input": each kind of bad line is sent as the first line of a connection (refused,
 * counted as rejected) and on an authenticated connection (ignored, counted as malformed or rejected).
 * The task still succeeds, a neighbour task is unaffected, and nothing is left behind.
 */
import { describe, expect, test } from 'vitest';
import { fixture, makeBroker } from '../helpers/core.js';
import { captureLogger, expectNothingLeft, hostile } from '../helpers/reliability.js';

const CASES = [
  { kind: 'malformed-json', counter: 'malformed', reason: /malformed JSON \(.+\): \{"task_id": oops/ },
  { kind: 'array', counter: 'malformed', reason: /expected a JSON object, got an array/ },
  { kind: 'string', counter: 'malformed', reason: /expected a JSON object, got a string/ },
  { kind: 'missing-task-id', counter: 'malformed', reason: /missing "task_id"/ },
  { kind: 'wrong-task-id', counter: 'rejected', reason: /message for task someone-else on the channel of/ },
  { kind: 'unknown-status', counter: 'malformed', reason: /unknown "status" "finished"/ },
  { kind: 'binary', counter: 'malformed', reason: /malformed JSON/ },
] as const;

describe('bad input from a sub-agent', () => {
  test.each(CASES)(
    '$kind: refused as a first line, ignored after authentication, logged and counted',
    async ({ kind, counter, reason }) => {
      const logger = captureLogger();
      const { broker, ipcDir } = makeBroker({ logger });
      const neighbour = broker.submit({ command: fixture('sdk-progress.mjs'), input: 'neighbour' });
      const task = broker.submit({ command: hostile('garbage.mjs'), args: [kind] });
      const progress: unknown[] = [];
      task.on('update', (u) => u.kind === 'partial' && progress.push(u.payload?.data));

      const result = await task.result;
      const data = result.data as { survived: string; firstReply: string };
      expect(data.survived).toBe(kind);
      expect(data.firstReply).toContain('"type":"reject"');
      expect(data.firstReply).toContain('authentication required');
      expect(progress).toEqual([{ progress: 50, after: kind }]);

      await task.finished;
      const snap = task.snapshot();
      expect(snap.state).toBe('succeeded');
      // The refused first line is a rejected sender; the bad line after authentication is `counter`.
      const expected = { malformed: 0, rejected: 1, ignored: 0 };
      expected[counter] += 1;
      expect(snap.counters).toEqual(expected);
      const log = broker.logOf(task.id).map((l) => l.text);
      expect(log.some((text) => text.startsWith('rejected: first message refused:'))).toBe(true);
      expect(log.some((text) => reason.test(text))).toBe(true);
      // The same reasons reach the broker's own log, where an operator looks.
      expect(logger.at('warn').some((text) => text.includes(task.id) && reason.test(text))).toBe(true);

      expect((await neighbour.result).data).toMatchObject({ echo: 'neighbour' });
      await neighbour.finished;
      await expectNothingLeft(ipcDir);
    },
  );
});
