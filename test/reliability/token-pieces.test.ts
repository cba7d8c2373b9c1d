/**
 * Issue 23 item 15: no piece of the token reaches a log, an update or a failure message. A malformed
 * line is previewed in its first 100 characters; the token cut by that limit (or quoted in part by
 * JSON.parse's message) did not match the whole token, so 22–40 of its 64 characters were logged.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, makeBroker, tempDir } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { captureLogger } from '../helpers/reliability.js';

/** Every 8-character piece of `token` that appears in `text`. */
function pieces(text: string, token: string): string[] {
  const found: string[] = [];
  for (let at = 0; at + 8 <= token.length; at++) if (text.includes(token.slice(at, at + 8))) found.push(token.slice(at, at + 8));
  return found;
}

describe('the token never leaves the channel, not even in part', () => {
  test('malformed lines that hold the token where a preview cuts it are logged, traced and reported without any piece of it', async () => {
    const logger = captureLogger();
    const { broker } = makeBroker({ logger, traceLines: true });
    const tokenFile = path.join(tempDir(), 'token');
    const seen: string[] = [];
    const done = await runTask(
      broker,
      { command: process.execPath, args: [fixture('round3/token-pieces.mjs')], env: { TOKEN_OUT: tokenFile } },
      (update) => seen.push(JSON.stringify(update)),
    );
    const token = readFileSync(tokenFile, 'utf8');
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(done.snapshot.counters.malformed).toBe(3);
    expect(done.snapshot.message).toMatch(/3 malformed lines ignored \(last: /);
    const everything = [
      ...seen,
      ...logger.lines.map((l) => l.text),
      ...broker.logOf(done.handle.id).map((l) => l.text),
      done.snapshot.message ?? '',
    ];
    expect(everything.some((text) => text.includes('[redacted]'))).toBe(true);
    expect(everything.flatMap((text) => pieces(text, token))).toEqual([]);
  });
});
