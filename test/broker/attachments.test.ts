import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import type { Attachment } from '../../src/protocol/index.js';
import { fixture, makeBroker, settle } from '../helpers/core.js';

const sha = (value: string | Uint8Array) => createHash('sha256').update(value).digest('hex');
const MB = 1024 * 1024;

function byName(list: Attachment[] | undefined, name: string): Attachment {
  const found = list?.find((a) => a.name === name);
  if (!found) throw new Error(`no attachment ${name} in ${JSON.stringify(list?.map((a) => a.name))}`);
  return found;
}

describe('attachments: big results beside the JSON line', () => {
  test('10 MB of text and 10 MB of bytes arrive whole over the socket; snapshots keep only names and sizes', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('attacher.mjs'), input: { text: 10 * MB, binary: 10 * MB } });
    const result = await task.result;
    const data = result.data as { text: string; binary: string };
    const text = byName(result.attachments, 'report.txt');
    const blob = byName(result.attachments, 'blob.bin');
    expect(text).toMatchObject({ bytes: 10 * MB, encoding: 'utf8' });
    expect(typeof text.content).toBe('string');
    expect(sha(text.content!)).toBe(data.text);
    expect(Buffer.isBuffer(blob.content)).toBe(true);
    expect(blob.bytes).toBe(10 * MB);
    expect(sha(blob.content!)).toBe(data.binary);
    expect(result.meta).toMatchObject({ channel: 'socket' });
    expect(task.snapshot().result?.attachments).toEqual([
      { name: 'report.txt', bytes: 10 * MB, encoding: 'utf8' },
      { name: 'blob.bin', bytes: 10 * MB, encoding: 'binary' },
    ]);
    expect(sha(broker.attachment(task.id, 'blob.bin')!)).toBe(data.binary);
  });

  test('100 MB of bytes arrive whole', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('attacher.mjs'), input: { binary: 100 * MB } });
    const result = await task.result;
    const blob = byName(result.attachments, 'blob.bin');
    expect(blob.bytes).toBe(100 * MB);
    expect(sha(blob.content!)).toBe((result.data as { binary: string }).binary);
  }, 60_000);

  test('a line and raw bytes written in odd pieces are framed exactly (newlines and broken UTF-8 inside the bytes)', async () => {
    const { broker } = makeBroker();
    for (const mode of ['whole', 'split']) {
      const task = broker.submit({ command: 'node', args: [fixture('raw-attacher.mjs'), mode] });
      const result = await task.result;
      expect(byName(result.attachments, 'notes.txt').content).toBe('héllo wörld 🙂 '.repeat(5000));
      expect(byName(result.attachments, 'blob').content).toEqual(Buffer.from([0, 10, 13, 255, 10, 10, 0]));
      expect(task.snapshot().counters).toEqual({ malformed: 0, rejected: 0, ignored: 0 });
    }
  });

  test('an attempt cut off inside its attachment is retried and the next one delivers it whole', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: 'node', args: [fixture('raw-attacher.mjs'), 'cut'], retries: { max: 1, backoffMs: 10 } });
    const result = await task.result;
    expect(result.data).toEqual({ attempt: 2 });
    expect(byName(result.attachments, 'blob').bytes).toBe(7);
    expect(
      broker
        .logOf(task.id)
        .map((l) => l.text)
        .join('\n'),
    ).toContain('bytes of an attachment still to come');
  });

  test('an SDK agent that crashes before its result is retried; the retry attaches again', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({
      command: fixture('attacher.mjs'),
      input: { text: MB, crashFirst: true },
      retries: { max: 1, backoffMs: 10 },
    });
    const result = await task.result;
    expect(result.meta).toMatchObject({ attempts: 2 });
    expect(sha(byName(result.attachments, 'report.txt').content!)).toBe((result.data as { text: string }).text);
  });

  test('without a socket the SDK sends attachments on stdout as base64: slower, but whole', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('attacher.mjs'), args: [`--stdout=${10 * MB}`] });
    const result = await task.result;
    const data = result.data as { text: string; binary: string };
    expect(result.meta).toMatchObject({ channel: 'stdout' });
    expect(sha(byName(result.attachments, 'report.txt').content!)).toBe(data.text);
    expect(sha(byName(result.attachments, 'blob.bin').content!)).toBe(data.binary);
    expect(byName(result.attachments, 'blob.bin').bytes).toBe(10 * MB);
  });

  test('raw bytes announced by a refused line (another task id) cannot be skipped: the task fails with reason protocol', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: 'node', args: [fixture('raw-attacher.mjs'), 'foreign'] });
    const outcome = await settle(task.result);
    expect(!outcome.ok && outcome.error.reason).toBe('protocol');
    expect(!outcome.ok && outcome.error.message).toContain('refused a message whose attachment bytes follow');
  });

  test('attachments over the limit fail the task with reason protocol', async () => {
    const { broker } = makeBroker({ limits: { maxAttachmentBytes: MB } });
    const task = broker.submit({ command: fixture('attacher.mjs'), input: { binary: 2 * MB } });
    const outcome = await settle(task.result);
    expect(!outcome.ok && outcome.error.reason).toBe('protocol');
    expect(!outcome.ok && outcome.error.message).toContain('exceed the 1048576-byte limit');
  });
});
