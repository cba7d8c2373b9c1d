/**
 * Fault table, issue 12 round 2 (items 1, 2, 3, 12): results that were lost, agents written to the
 * design's template that were refused, failures that did not say why, and the token leaking.
 */
import { describe, expect, test } from 'vitest';
import { fixture, makeBroker } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { captureLogger } from '../helpers/reliability.js';

const round2 = (name: string) => fixture(`round2/${name}`);

describe('every byte a peer wrote is read', () => {
  test('an agent that writes a burst of 500 partials and its success in one write, then closes without reading, succeeds', async () => {
    const { broker } = makeBroker();
    const done = await runTask(broker, { command: process.execPath, args: [round2('burst-and-close.mjs')] });
    expect(done.error?.message).toBeUndefined();
    expect(done.payload?.data).toEqual({ count: 500 });
    expect(done.partials).toHaveLength(500);
  });

  test('a connection that keeps delivering after the agent exited is read to its end, not cut at drainMs', async () => {
    // The agent exits at its grandchild's first line; the grandchild writes for ~2 s more, a line
    // every 50 ms: never quiet for drainMs (1 s, 20 gaps' worth on a slow machine). The broker used
    // to stop reading a fixed drainMs after the exit: this task then "crashed".
    const { broker } = makeBroker({ drainMs: 1000 });
    const started = Date.now();
    const done = await runTask(broker, {
      command: process.execPath,
      args: [round2('hands-off-connection.mjs'), '--partials=40', '--gap=50'],
    });
    expect(done.error?.message).toBeUndefined();
    expect(done.payload?.data).toEqual({ partials: 40 });
    expect(done.partials.map((p) => (p.data as { i: number }).i)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(Date.now() - started).toBeGreaterThan(1500);
  });
});

describe('agents written to the design (no token) on a private POSIX socket', () => {
  test.skipIf(process.platform === 'win32')('the design template without a token succeeds; a wrong token is still refused', async () => {
    const { broker } = makeBroker();
    const plain = await runTask(broker, { command: process.execPath, args: [round2('design-template.mjs')] });
    expect(plain.error?.message).toBeUndefined();
    expect(plain.payload?.data).toEqual({ msg: 'hello' });

    const wrong = await runTask(broker, { command: process.execPath, args: [round2('design-template.mjs'), 'wrong'] });
    expect(wrong.error?.reason).toBe('crashed');
    // Item 3: the failure says what was rejected, not only that no final payload came.
    expect(wrong.error?.message).toMatch(/1 connection rejected: wrong token/);
  });

  test('requireToken: true restores strict mode, and the failure says why', async () => {
    const { broker } = makeBroker({ requireToken: true });
    const done = await runTask(broker, { command: process.execPath, args: [round2('design-template.mjs')] });
    expect(done.error?.reason).toBe('crashed');
    expect(done.error?.message).toMatch(/1 connection rejected: no token on its first line/);
    expect(done.snapshot.message).toContain('1 connection rejected: no token on its first line');
  });
});

describe('the token never leaves the channel', () => {
  test('a partial carrying the token is delivered without it; a malformed first line is logged with the token redacted', async () => {
    const logger = captureLogger();
    const { broker } = makeBroker({ logger, traceLines: true });
    const seen: string[] = [];
    const done = await runTask(broker, { command: process.execPath, args: [round2('token-partial.mjs')] }, (update) => {
      seen.push(JSON.stringify(update));
    });
    expect(done.payload?.data).toEqual({ done: true });
    expect(done.partials).toHaveLength(1);
    expect(done.partials[0]).not.toHaveProperty('token');
    expect(done.payload).not.toHaveProperty('token');
    const token = /[0-9a-f]{64}/;
    const everything = [...seen, ...logger.lines.map((l) => l.text), ...broker.logOf(done.handle.id).map((l) => l.text)];
    expect(everything.filter((text) => token.test(text))).toEqual([]);
    // The malformed first line was seen and logged (redacted), not silently dropped.
    expect(logger.lines.some((l) => l.text.includes('[redacted]'))).toBe(true);
  });
});
