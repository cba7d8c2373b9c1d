/** The spool file: one name, one reader and one check, shared by the SDK and the broker. */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, test } from 'vitest';
import {
  parseSpooled,
  readSpooled,
  spoolFileName,
  spoolPath,
  taskIdOfSpoolFile,
  writeSpooled,
  writeSpooledLazily,
} from '../../src/protocol/spool.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('spool', () => {
  test('a task id names its file and back; a path in the id cannot leave the directory', () => {
    expect(spoolFileName('0190-abc')).toBe('0190-abc.json');
    expect(taskIdOfSpoolFile('0190-abc.json')).toBe('0190-abc');
    expect(taskIdOfSpoolFile('x.sock')).toBeUndefined();
    expect(taskIdOfSpoolFile('.json')).toBeUndefined();
    expect(spoolFileName('../../etc/passwd')).toBe('passwd.json');
    expect(spoolFileName('..\\evil')).toBe('evil.json');
  });

  test('only a valid final payload for the expected task is read', () => {
    const success = { task_id: 't1', status: 'success', data: 42 };
    expect(parseSpooled(JSON.stringify(success))).toEqual({ ok: true, payload: success });
    expect(parseSpooled(JSON.stringify(success), 't2')).toEqual({ ok: false, reason: 'for task t1' });
    expect(parseSpooled(JSON.stringify({ task_id: 't1', status: 'partial' }))).toEqual({ ok: false, reason: 'not a final payload' });
    expect(parseSpooled('{"task_id":')).toMatchObject({ ok: false });
    expect(parseSpooled('[]')).toMatchObject({ ok: false });
  });

  test('what the SDK writes, the broker reads (owner-only file)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-spool-'));
    dirs.push(dir);
    const payload = { task_id: 't1', status: 'error' as const, data: { message: 'no' } };
    writeSpooled(dir, payload);
    expect(readFileSync(spoolPath(dir, 't1'), 'utf8')).toBe(`${JSON.stringify(payload)}\n`);
    if (process.platform !== 'win32') expect(statSync(spoolPath(dir, 't1')).mode & 0o777).toBe(0o600);
    expect(readSpooled(dir, 't1')).toEqual(payload);
    expect(readSpooled(dir, 'other')).toBeUndefined();
  });

  // A restarted hub adopts spool files while agents of the killed one may still be writing theirs:
  // a file written in place (truncated, then filled) read half-written was found unreadable and
  // removed, and a 10 MB result was lost (kill-points seed 1038728951, beside two CPU spinners).
  test('a spool file is never seen half-written: a reader finds none, or all of it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-spool-'));
    dirs.push(dir);
    const payload = { task_id: 't1', status: 'success' as const, data: { text: 'x'.repeat(4 * 1024 * 1024) } };
    const whole = Buffer.byteLength(`${JSON.stringify(payload)}\n`);
    // A thread looks at the file's size as fast as it can while this one writes it, again and again.
    const flags = new Int32Array(new SharedArrayBuffer(8));
    const watcher = new Worker(WATCH_SIZES, { eval: true, workerData: { file: spoolPath(dir, 't1'), flags } });
    const sizes = new Promise<number[]>((resolve, reject) => watcher.once('message', resolve).once('error', reject));
    try {
      for (let spins = 0; Atomics.load(flags, 0) === 0 && spins < 100; spins++) Atomics.wait(flags, 0, 0, 100);
      expect(Atomics.load(flags, 0)).toBe(1);
      for (let n = 0; n < 8; n++) {
        if (n % 2 === 0) writeSpooled(dir, payload);
        else await writeSpooledLazily(dir, payload);
      }
    } finally {
      Atomics.store(flags, 1, 1);
    }
    expect(await sizes).toEqual([whole]);
    expect(readSpooled(dir, 't1')).toEqual(payload);
    // Nothing left beside it (no temporary file).
    expect(readdirSync(dir)).toEqual(['t1.json']);
    await watcher.terminate();
  });

  test('spooled attachments travel inline (base64) and come back with their content; raw ones are refused', () => {
    const payload = { task_id: 't1', status: 'success', attachments: [{ name: 'r.txt', bytes: 5, encoding: 'utf8', base64: 'aMOpbGw=' }] };
    const read = parseSpooled(JSON.stringify(payload), 't1');
    expect(read.ok && read.payload.attachments).toEqual([{ name: 'r.txt', bytes: 5, encoding: 'utf8', content: 'héll' }]);
    const raw = parseSpooled(JSON.stringify({ ...payload, attachments: [{ name: 'r.txt', bytes: 5 }] }), 't1');
    expect(!raw.ok && raw.reason).toContain('must carry their bytes in "base64"');
  });
});

/** The watching thread: every size the file had while it looked (none while it did not exist), until told to stop. */
const WATCH_SIZES = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const { file, flags } = workerData;
const sizes = new Set();
Atomics.store(flags, 0, 1);
Atomics.notify(flags, 0);
while (Atomics.load(flags, 1) === 0) {
  try {
    sizes.add(statSync(file).size);
  } catch {
    // not there yet
  }
}
parentPort.postMessage([...sizes]);
`;
