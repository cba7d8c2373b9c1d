/**
 * The worker's reporter without Redis: what it sends for a job, in what messages. Content partials
 * are never merged or dropped; progress-only partials in a row are; one message is in flight at a
 * time, none is bigger than its limit, and a backlog past its limit overflows instead of growing.
 */
import { describe, expect, test } from 'vitest';
import type { Payload } from '../../src/protocol/index.js';
import { Reporter, type ReporterLimits } from '../../src/fleet/reporter.js';
import { isProgressOnly, supersedes, type ProgressBatch, type WorkerEvent } from '../../src/fleet/wire.js';

const partial = (data?: unknown): WorkerEvent => ({ t: 'partial', payload: { task_id: 't', status: 'partial', data } });
const dataOf = (events: WorkerEvent[]) => events.map((e) => (e.t === 'partial' ? e.payload.data : e.t));

/** A job whose updateProgress calls wait until `release()`; records every message. */
function slowJob() {
  const sent: ProgressBatch[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const pending: Array<() => void> = [];
  return {
    sent,
    maxInFlight: () => maxInFlight,
    updateProgress(batch: ProgressBatch) {
      sent.push(batch);
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      return new Promise<void>((resolve) => pending.push(() => (inFlight--, resolve())));
    },
    /** Acknowledges messages until `done` settles (at most 1000 rounds). */
    async drain(done: Promise<void>) {
      let settled = false;
      void done.then(() => (settled = true));
      for (let i = 0; i < 1000 && !settled; i++) await this.release();
      expect(settled).toBe(true);
    },
    /** Acknowledges every message sent so far, and lets the reporter send its next. */
    async release() {
      for (const done of pending.splice(0)) done();
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

const LIMITS: ReporterLimits = { intervalMs: 5, maxBatchChars: 2000, maxBacklogChars: 20_000 };

describe('progress-only partials', () => {
  test.each([
    [undefined, true],
    [{}, true],
    [{ progress: 40 }, true],
    [{ progress: 40, message: 'parsing' }, true],
    [{ message: 'parsing' }, true],
    [{ delta: 'Hel' }, false],
    [{ text: 'Hello' }, false],
    [{ progress: 40, step: 'parsing' }, false],
    [{ progress: '40' }, false],
    [{ message: { rich: true } }, false],
    ['a string', false],
    [[1, 2], false],
  ])('data %j: progress-only %s', (data, expected) => {
    expect(isProgressOnly({ task_id: 't', status: 'partial', data })).toBe(expected);
  });

  test('a usage report (meta.token_usage or meta.cost_usd, with or without data) is never progress-only: the budget counts it', () => {
    expect(isProgressOnly({ task_id: 't', status: 'partial', meta: { token_usage: { input: 5, output: 1 } } })).toBe(false);
    expect(isProgressOnly({ task_id: 't', status: 'partial', data: { progress: 4 }, meta: { cost_usd: 0.5 } })).toBe(false);
    expect(isProgressOnly({ task_id: 't', status: 'partial', data: { progress: 4 }, meta: { timestamp: 'now' } })).toBe(true);
  });

  test('a later one supersedes an earlier only when it sets every field the earlier set', () => {
    const p = (data: unknown): Payload => ({ task_id: 't', status: 'partial', data });
    expect(supersedes(p({ progress: 1 }), p({ progress: 2 }))).toBe(true);
    expect(supersedes(p({ progress: 1 }), p({ progress: 2, message: 'm' }))).toBe(true);
    expect(supersedes(p({ progress: 1, message: 'm' }), p({ progress: 2 }))).toBe(false);
    expect(supersedes(p({ progress: 1 }), p({ message: 'm' }))).toBe(false);
    expect(supersedes(p({ progress: 1 }), p({ delta: 'x' }))).toBe(false);
    expect(supersedes(p({ delta: 'x' }), p({ progress: 1 }))).toBe(false);
  });
});

describe('the reporter', () => {
  test('sends every content partial in order, coalescing only progress-only runs', async () => {
    const job = slowJob();
    const reporter = new Reporter(job, undefined, LIMITS);
    reporter.push({ t: 'placed', worker: 'w' });
    for (let i = 0; i < 5; i++) reporter.push(partial({ delta: `${i}` }));
    for (let i = 1; i <= 5; i++) reporter.push(partial({ progress: i * 10 }));
    reporter.push(partial({ delta: '5' }));
    reporter.push(partial({ progress: 60 }));
    reporter.push(partial({ progress: 70, message: 'm' }));
    reporter.push(partial({ progress: 80 })); // drops the message: not a replacement
    await job.drain(reporter.flush());
    expect(job.sent.map((b) => b.seq)).toEqual([0]);
    expect(dataOf(job.sent[0]!.events)).toEqual([
      'placed',
      ...[0, 1, 2, 3, 4].map((i) => ({ delta: `${i}` })),
      { progress: 50 },
      { delta: '5' },
      { progress: 70, message: 'm' },
      { progress: 80 },
    ]);
  });

  test('one message in flight; what comes meanwhile waits, in messages no bigger than the limit', async () => {
    const job = slowJob();
    const reporter = new Reporter(job, undefined, LIMITS);
    const deltas = Array.from({ length: 150 }, (_, i) => `delta ${i} `);
    for (const delta of deltas) reporter.push(partial({ delta }));
    await job.drain(reporter.flush());
    expect(reporter.overflowed).toBeUndefined();
    expect(job.maxInFlight()).toBe(1);
    expect(job.sent.length).toBeGreaterThan(1);
    expect(job.sent.map((b) => b.seq)).toEqual(job.sent.map((_, i) => i));
    for (const batch of job.sent) expect(JSON.stringify(batch.events).length).toBeLessThanOrEqual(LIMITS.maxBatchChars + 100);
    expect(dataOf(job.sent.flatMap((b) => b.events))).toEqual(deltas.map((delta) => ({ delta })));
  });

  test('an event bigger than a message goes alone', async () => {
    const job = slowJob();
    const reporter = new Reporter(job, undefined, LIMITS);
    const big = 'x'.repeat(LIMITS.maxBatchChars * 2);
    reporter.push(partial({ delta: 'a' }));
    reporter.push(partial({ delta: big }));
    reporter.push(partial({ delta: 'b' }));
    await job.drain(reporter.flush());
    expect(job.sent.map((b) => dataOf(b.events))).toEqual([[{ delta: 'a' }], [{ delta: big }], [{ delta: 'b' }]]);
  });

  test('a backlog past its limit overflows once and refuses later partials rather than grow', async () => {
    const job = slowJob();
    const overflows: number[] = [];
    const reporter = new Reporter(job, (chars) => overflows.push(chars), LIMITS);
    for (let i = 0; i < 2000; i++) reporter.push(partial({ delta: `delta ${i} ` }));
    expect(overflows.length).toBe(1);
    expect(overflows[0]).toBeGreaterThan(LIMITS.maxBacklogChars);
    expect(reporter.overflowed).toBe(overflows[0]);
    expect(reporter.refused).toBeGreaterThan(0);
    reporter.push({ t: 'log', stream: 'broker', text: 'still sent' });
    await job.drain(reporter.flush());
    const sent = job.sent.flatMap((b) => b.events);
    // What was queued before the overflow still goes, whole and in order; nothing after it.
    expect(dataOf(sent.slice(0, -1))).toEqual(Array.from({ length: 2000 - reporter.refused }, (_, i) => ({ delta: `delta ${i} ` })));
  });

  test('a small backlog waits for the interval; flush() sends it at once', async () => {
    const job = slowJob();
    const reporter = new Reporter(job, undefined, { ...LIMITS, intervalMs: 60_000 });
    reporter.push(partial({ progress: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(job.sent.length).toBe(0);
    const flushed = reporter.flush();
    expect(job.sent.length).toBe(1);
    await job.drain(flushed);
  });
});
