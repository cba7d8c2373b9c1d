import { describe, expect, test } from 'vitest';
import { outgoingAttachment, inlined, resolveAttachments, TextWhileReceiving, withoutContent } from '../../src/protocol/attachments.js';
import { LineDecoder } from '../../src/protocol/framing.js';
import { validateAgentMessage, type Payload } from '../../src/protocol/messages.js';

/** A decoder that reads `raw[line]` raw bytes after the line of that text, recording what it got. */
function rawDecoder(raw: Record<string, number>, max?: number) {
  const got: Array<string | Buffer> = [];
  const d: LineDecoder = new LineDecoder(
    {
      line: (text) => {
        got.push(text);
        const n = raw[text];
        if (n !== undefined) d.readRaw(n, (bytes) => got.push(Buffer.from(bytes)));
      },
      overflow: () => got.push('OVERFLOW'),
    },
    max,
  );
  return { d, got };
}

const STREAM = Buffer.concat([
  Buffer.from('one\nattach\n'),
  Buffer.from([10, 10, 0xe4, 0xbd, 13, 10]),
  Buffer.from('two 你好\nempty\nthree\n'),
]);
const EXPECTED = ['one', 'attach', Buffer.from([10, 10, 0xe4, 0xbd, 13, 10]), 'two 你好', 'empty', Buffer.alloc(0), 'three'];

describe('LineDecoder raw bytes (attachments)', () => {
  test('raw bytes inside one chunk, newlines and broken UTF-8 among them, are not lines', () => {
    const { d, got } = rawDecoder({ attach: 6, empty: 0 });
    d.push(STREAM);
    expect(got).toEqual(EXPECTED);
  });

  test('every way of cutting the stream into two chunks gives the same result', () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      const { d, got } = rawDecoder({ attach: 6, empty: 0 });
      d.push(STREAM.subarray(0, cut));
      d.push(STREAM.subarray(cut));
      expect(got, `cut at ${cut}`).toEqual(EXPECTED);
    }
  });

  test('byte by byte, and on the slow path of a region larger than the line limit', () => {
    const one = rawDecoder({ attach: 6, empty: 0 });
    for (const byte of STREAM) one.d.push(Buffer.from([byte]));
    expect(one.got).toEqual(EXPECTED);
    const slow = rawDecoder({ attach: 6, empty: 0 }, 12);
    slow.d.push(STREAM);
    expect(slow.got).toEqual(EXPECTED);
  });

  test('rawPending counts what is still to come', () => {
    const { d } = rawDecoder({ attach: 6 });
    d.push(Buffer.from('attach\n12'));
    expect(d.rawPending).toBe(4);
    d.push(Buffer.from('3456'));
    expect(d.rawPending).toBe(0);
  });
});

describe('attachment announcements', () => {
  const base = { task_id: 't', status: 'success' };
  test.each([
    [[{ name: '../x', bytes: 1 }], 'not a plain file name'],
    [[{ name: 'a/b', bytes: 1 }], 'not a plain file name'],
    [[{ name: 'a', bytes: -1 }], 'whole number'],
    [[{ name: 'a', bytes: 1.5 }], 'whole number'],
    [[{ name: 'a', bytes: 1, encoding: 'hex' }], 'binary or utf8'],
    [
      [
        { name: 'a', bytes: 1 },
        { name: 'a', bytes: 2 },
      ],
      'used twice',
    ],
    [[{ name: 'a', bytes: 1, content: 'x' }], 'set by the receiver'],
    ['a', 'must be an array'],
  ])('%j is refused (%s)', (attachments, reason) => {
    const checked = validateAgentMessage({ ...base, attachments });
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.reason).toContain(reason);
  });

  test('only final payloads carry attachments', () => {
    const checked = validateAgentMessage({ ...base, status: 'partial', attachments: [] });
    expect(!checked.ok && checked.reason).toContain('only final payloads');
  });

  test('inline base64 round-trips text and bytes; a wrong length is refused; snapshots keep headers only', () => {
    const text = outgoingAttachment('t.txt', 'héllo 🙂');
    const bin = outgoingAttachment('b', new Uint8Array([0, 255, 10]));
    const payload: Payload = { ...base, status: 'success', attachments: [inlined(text), inlined(bin)] };
    const resolved = resolveAttachments(payload);
    expect(resolved.ok && resolved.payload.attachments).toEqual([
      { name: 't.txt', bytes: 11, encoding: 'utf8', content: 'héllo 🙂' },
      { name: 'b', bytes: 3, encoding: 'binary', content: Buffer.from([0, 255, 10]) },
    ]);
    expect(resolved.ok && withoutContent(resolved.payload).attachments).toEqual([
      { name: 't.txt', bytes: 11, encoding: 'utf8' },
      { name: 'b', bytes: 3, encoding: 'binary' },
    ]);
    const wrong = resolveAttachments({ ...payload, attachments: [{ ...inlined(bin), bytes: 4 }] });
    expect(!wrong.ok && wrong.reason).toContain('announced 4 bytes but has 3');
  });
});

describe('text decoded while the bytes arrive', () => {
  test('readRawPieces hands over exactly the raw bytes, in order, however the stream is cut, then done', () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      const got: Array<string | Buffer> = [];
      const pieces: Buffer[] = [];
      const d: LineDecoder = new LineDecoder({
        line: (text) => {
          got.push(text);
          if (text === 'attach')
            d.readRawPieces(
              6,
              (piece) => pieces.push(Buffer.from(piece)),
              () => got.push(Buffer.concat(pieces)),
            );
          if (text === 'empty')
            d.readRawPieces(
              0,
              () => got.push('PIECE'),
              () => got.push(Buffer.alloc(0)),
            );
        },
        overflow: () => got.push('OVERFLOW'),
      });
      d.push(STREAM.subarray(0, cut));
      d.push(STREAM.subarray(cut));
      expect(got).toEqual(EXPECTED);
    }
  });

  test('ASCII and non-ASCII text, in pieces of any size, comes out whole; lengths are checked', () => {
    const MB = 1024 * 1024;
    const ascii = 'plain ascii {"json": [1, 2, 3]}\n'.repeat(Math.ceil((2.5 * MB) / 32));
    const mixed = ascii.slice(0, 1.5 * MB) + 'héllo 你好' + ascii.slice(0, MB);
    for (const text of [ascii, mixed, 'short 你好', '']) {
      const bytes = Buffer.from(text, 'utf8');
      // 1 byte cuts multibyte characters; 1000003 straddles the mebibyte steps.
      for (const size of [1, 65536, 1000003, Math.max(1, bytes.length)]) {
        if (size === 1 && bytes.length > 100_000) continue;
        const assembler = new TextWhileReceiving();
        for (let at = 0; at < bytes.length; at += size) assembler.push(bytes.subarray(at, at + size));
        const got = assembler.finish();
        expect(got.bytes).toBe(bytes.length);
        expect(got.text === text).toBe(true);
        const payload: Payload = {
          task_id: 't',
          status: 'success',
          attachments: [{ name: 'a.txt', bytes: bytes.length, encoding: 'utf8' }],
        };
        const resolved = resolveAttachments(payload, [got]);
        expect(resolved.ok && resolved.payload.attachments?.[0]).toMatchObject({ bytes: bytes.length, encoding: 'utf8' });
        expect(resolved.ok && resolved.payload.attachments?.[0]?.content === text).toBe(true);
        const short: Payload = { ...payload, attachments: [{ name: 'a.txt', bytes: bytes.length + 1, encoding: 'utf8' }] };
        expect(resolveAttachments(short, [got])).toMatchObject({ ok: false, reason: expect.stringMatching(/announced/) });
      }
    }
  });
});
