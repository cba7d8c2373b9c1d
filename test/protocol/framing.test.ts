import { describe, expect, test } from 'vitest';
import { LineDecoder, encodeLine, parseLine } from '../../src/protocol/framing.js';
import { validateAgentMessage } from '../../src/protocol/messages.js';

function decoder(max?: number) {
  const lines: string[] = [];
  const overflows: number[] = [];
  const d = new LineDecoder({ line: (l) => lines.push(l), overflow: (n) => overflows.push(n) }, max);
  return { d, lines, overflows };
}

describe('LineDecoder', () => {
  test('joins a line split across many chunks', () => {
    const { d, lines } = decoder();
    const bytes = Buffer.from(encodeLine({ a: 'hello world' }));
    for (const byte of bytes) d.push(Buffer.from([byte]));
    expect(lines).toEqual([JSON.stringify({ a: 'hello world' })]);
  });

  test('splits many lines in one chunk and keeps the unfinished tail', () => {
    const { d, lines } = decoder();
    d.push(Buffer.from('{"n":1}\n{"n":2}\r\n{"n":'));
    expect(lines).toEqual(['{"n":1}', '{"n":2}']);
    d.push(Buffer.from('3}\n'));
    expect(lines.map((l) => JSON.parse(l).n)).toEqual([1, 2, 3]);
  });

  test('keeps multibyte UTF-8 characters whole when chunks cut through them', () => {
    const text = '你好，世界 🌍🚀 👩‍💻 café';
    const bytes = Buffer.from(encodeLine({ text }));
    for (let step = 1; step <= 5; step++) {
      const { d, lines } = decoder();
      for (let i = 0; i < bytes.length; i += step) d.push(bytes.subarray(i, i + step));
      expect(JSON.parse(lines[0]!).text).toBe(text);
    }
  });

  test('carries a 10 MB line through 64 KiB chunks intact', () => {
    const big = 'x'.repeat(10 * 1024 * 1024);
    const bytes = Buffer.from(encodeLine({ big }));
    const { d, lines } = decoder();
    for (let i = 0; i < bytes.length; i += 65536) d.push(bytes.subarray(i, i + 65536));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).big.length).toBe(big.length);
  });

  test('reports a line over the limit once and resynchronises at the next newline', () => {
    const { d, lines, overflows } = decoder(16);
    d.push(Buffer.from('{"a":"0123456789'));
    d.push(Buffer.from('0123456789"}'));
    expect(overflows).toHaveLength(1);
    d.push(Buffer.from('still the long line\n{"ok":1}\n'));
    expect(lines).toEqual(['{"ok":1}']);
  });

  test('a line that never ends is bounded by the limit', () => {
    const { d, overflows } = decoder(1024);
    for (let i = 0; i < 100; i++) d.push(Buffer.alloc(100, 0x61));
    expect(overflows.length).toBe(1);
    expect(d.buffered).toBe(0);
  });

  test('end() flushes a last line without a newline', () => {
    const { d, lines } = decoder();
    d.push(Buffer.from('{"last":true}'));
    expect(lines).toEqual([]);
    expect(d.end()).toBeGreaterThan(0);
    expect(lines).toEqual(['{"last":true}']);
  });
});

describe('message validation', () => {
  test.each([
    ['[1,2]', 'expected a JSON object, got an array'],
    ['"text"', 'expected a JSON object, got a string'],
    ['{"status":"success"}', 'missing "task_id"'],
    ['{"task_id":"t","status":"done"}', 'unknown "status"'],
    ['{"task_id":"t","type":"launch"}', 'unknown message type'],
    ['{"task_id":"t","status":"partial","meta":[]}', '"meta" must be an object'],
  ])('rejects %s with a reason', (text, reason) => {
    const parsed = parseLine(text);
    expect(parsed.ok).toBe(true);
    const checked = validateAgentMessage(parsed.ok ? parsed.value : undefined);
    expect(checked.ok).toBe(false);
    expect(checked.ok ? '' : checked.reason).toContain(reason);
  });

  test('malformed JSON gets a short reason with a preview', () => {
    const parsed = parseLine('{not json');
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.reason).toMatch(/^malformed JSON .*\{not json/);
  });

  test('accepts every status and the hello/ask messages', () => {
    for (const status of ['partial', 'heartbeat', 'success', 'error', 'cancelled']) {
      expect(validateAgentMessage({ task_id: 't', status }).ok).toBe(true);
    }
    expect(validateAgentMessage({ type: 'hello', task_id: 't', token: 'x' }).ok).toBe(true);
    expect(validateAgentMessage({ type: 'ask', task_id: 't', ask_id: 'q', question: '?', choices: ['a'] }).ok).toBe(true);
  });
});
