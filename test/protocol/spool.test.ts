/** The spool file: one name, one reader and one check, shared by the SDK and the broker. */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { parseSpooled, readSpooled, spoolFileName, spoolPath, taskIdOfSpoolFile, writeSpooled } from '../../src/protocol/spool.js';

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

  test('spooled attachments travel inline (base64) and come back with their content; raw ones are refused', () => {
    const payload = { task_id: 't1', status: 'success', attachments: [{ name: 'r.txt', bytes: 5, encoding: 'utf8', base64: 'aMOpbGw=' }] };
    const read = parseSpooled(JSON.stringify(payload), 't1');
    expect(read.ok && read.payload.attachments).toEqual([{ name: 'r.txt', bytes: 5, encoding: 'utf8', content: 'héll' }]);
    const raw = parseSpooled(JSON.stringify({ ...payload, attachments: [{ name: 'r.txt', bytes: 5 }] }), 't1');
    expect(!raw.ok && raw.reason).toContain('must carry their bytes in "base64"');
  });
});
