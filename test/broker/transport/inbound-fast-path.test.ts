/**
 * readInbound's fast path for `partial` and `heartbeat` lines gives the same answer as the full checks
 * (readInboundChecked) for many random lines, valid and malformed: every malformed line is still
 * refused, with the same detail, whichever path it takes.
 */
import { describe, expect, test } from 'vitest';
import { readInbound, readInboundChecked } from '../../../src/broker/transport/inbound.js';
import { MAX_JSON_DEPTH, parseLine } from '../../../src/protocol/index.js';

const TASK = '01a22bed-ad26-779a-897e-018db26b0390';
const LINES = 20_000;

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function generator(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function lines(seed: number): string[] {
  const random = generator(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const chance = (p: number): boolean => random() < p;
  const nested = (depth: number): unknown => (depth === 0 ? 1 : chance(0.5) ? [nested(depth - 1)] : { a: nested(depth - 1) });
  const anyValue = (): unknown =>
    pick([
      () => undefined,
      () => null,
      () => true,
      () => 0,
      () => -1.5,
      () => '',
      () => 'text',
      () => [],
      () => [1, 'two'],
      () => ({}),
      () => ({ progress: 40, step: 'reading a file' }),
      () => nested(pick([3, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 2])),
    ])();
  const base = (): Record<string, unknown> =>
    pick([
      () => ({ task_id: TASK, status: 'partial', data: { progress: Math.floor(random() * 100), i: 1 } }),
      () => ({ task_id: TASK, status: 'heartbeat' }),
      () => ({ task_id: TASK, status: 'partial', data: 'x', meta: { timestamp: '2026-12-07T20:00:00.000Z', token_usage: { input: 3 } } }),
      () => ({ task_id: TASK, status: pick(['success', 'error', 'cancelled']), data: { ok: 1 }, retryable: false }),
      () => ({ type: 'hello', task_id: TASK, token: 'secret-token-0123456789' }),
      () => ({ type: 'ask', task_id: TASK, ask_id: 'a1', question: 'Go?', choices: ['yes', 'no'] }),
      () => ({ type: 'tool_call', task_id: TASK, call_id: 'c1', name: 'read', arguments: {} }),
    ])();
  const fields = ['task_id', 'status', 'type', 'token', 'meta', 'retryable', 'attachments', 'data', 'call_id', '__proto__'];
  const mutate = (message: Record<string, unknown>): void => {
    const field = pick(fields);
    if (chance(0.3)) delete message[field];
    else if (field === 'task_id' && chance(0.5)) message.task_id = pick(['other-task', '', TASK.toUpperCase()]);
    else if (field === 'status' && chance(0.5)) message.status = pick(['partial', 'heartbeat', 'done', 'PARTIAL']);
    else if (field === 'attachments' && chance(0.5)) message.attachments = [{ name: 'a.txt', bytes: 2, base64: 'aGk=' }];
    else if (field === '__proto__')
      Object.defineProperty(message, '__proto__', { value: anyValue(), enumerable: true, configurable: true, writable: true });
    else message[field] = anyValue();
  };
  return Array.from({ length: LINES }, () => {
    const message = base();
    for (let n = Math.floor(random() * 3); n > 0; n--) mutate(message);
    const text = JSON.stringify(pick([message, message, message, message, [message], null, 'partial']));
    // Some lines cut short or damaged: malformed JSON, which the depth check still judges.
    if (chance(0.05)) return text.slice(0, Math.floor(random() * text.length));
    if (chance(0.02)) return '['.repeat(MAX_JSON_DEPTH + 1) + text;
    return text;
  });
}

describe('readInbound fast path', () => {
  test.each([1, 2, 3])('agrees with the full checks on 20,000 random lines (seed %i)', (seed) => {
    let accepted = 0;
    let refused = 0;
    for (const text of lines(seed)) {
      for (const via of ['socket', 'stdout'] as const) {
        const fast = readInbound(text, TASK, via);
        expect(fast, `${via}: ${text.slice(0, 300)}`).toEqual(readInboundChecked(text, TASK, via));
        if (fast.ok) accepted += 1;
        else refused += 1;
      }
    }
    // Both kinds are well represented, so the comparison means something.
    expect(accepted).toBeGreaterThan(LINES / 4);
    expect(refused).toBeGreaterThan(LINES / 4);
  });

  test.each([
    ['meta is an array', { task_id: TASK, status: 'partial', meta: [1] }, '"meta" must be an object'],
    ['meta is null', { task_id: TASK, status: 'heartbeat', meta: null }, '"meta" must be an object'],
    ['retryable is a string', { task_id: TASK, status: 'partial', retryable: 'yes' }, '"retryable" must be a boolean'],
    ['token is a number', { task_id: TASK, status: 'partial', token: 5 }, '"token" must be a string'],
    ['attachments on a partial', { task_id: TASK, status: 'partial', attachments: [] }, 'only final payloads'],
    ['an unknown type', { task_id: TASK, status: 'partial', type: 'progress' }, 'unknown message type'],
  ])('a progress line whose %s is refused', (_name, message, reason) => {
    const inbound = readInbound(JSON.stringify(message), TASK, 'socket');
    expect(inbound.ok).toBe(false);
    if (!inbound.ok) expect(inbound.detail).toContain(reason);
  });

  test('a progress line of another task is refused as such', () => {
    const inbound = readInbound(JSON.stringify({ task_id: 'other', status: 'partial' }), TASK, 'socket');
    expect(inbound).toMatchObject({ ok: false, kind: 'rejected', cause: 'task-id' });
  });
});

describe('parseLine runs the depth check only where it can matter', () => {
  test('a short valid line parses; a deep one is refused whether it parses or not', () => {
    expect(parseLine('{"a":[1,2]}')).toEqual({ ok: true, value: { a: [1, 2] } });
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    expect(parseLine(deep)).toMatchObject({ ok: false, tooDeep: true });
    expect(parseLine('['.repeat(MAX_JSON_DEPTH + 1))).toMatchObject({ ok: false, tooDeep: true });
    expect(parseLine('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toMatchObject({ ok: true });
    expect(parseLine('[[1]')).toMatchObject({ ok: false, reason: expect.stringContaining('malformed JSON') });
  });
});
