/**
 * Issue 48 §3 (hub RSS with 100 × 10 MB results in history): a whole result kept on disk is sent
 * from its file as it is, not parsed and serialized again, and the reply is byte for byte what the
 * parse path made of it (lone surrogates' escapes rewritten as `wellFormedJson` does), through the
 * panel's server and the control endpoint. A file replaced by a symlink, a directory or a file cut
 * short is refused as before (the reply is `null`), never followed; a file that changes size while it
 * is sent ends the reply cut short, never with a wrong body.
 */
import { fstatSync, mkdirSync, openSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RESULTS_DIR } from '../../../src/broker/history/results.js';
import { LoneEscapes, sendResultFile } from '../../../src/hub/http/result-file.js';
import { RESULT_INLINE_MAX_BYTES } from '../../../src/model/task.js';
import { wellFormedJson } from '../../../src/model/well-formed.js';
import { fixture, tempDir } from '../../helpers/core.js';
import { startTestHeadless, type TestHeadless } from '../../helpers/panel.js';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function get(target: { port: number } | { socketPath: string }, urlPath: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...target, host: '127.0.0.1', path: urlPath, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('aborted')));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A string of `n` pieces drawn by `next` from what JSON escapes or `wellFormedJson` rewrites. */
function tricky(n: number, next: () => number): string {
  const pieces = [
    'a',
    '\\',
    '\\\\',
    '"',
    '\ud800',
    '\udfff',
    '\udbff',
    '\ud83d\ude42',
    'u',
    'd',
    '8',
    'f',
    '\\ud800',
    '\\u',
    '好',
    '\n',
    '\u0001',
  ];
  let text = '';
  for (let i = 0; i < n; i++) text += pieces[next() % pieces.length];
  return text;
}

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

describe('LoneEscapes: wellFormedJson on bytes in pieces', () => {
  test('any JSON.stringify text, cut anywhere, comes out as wellFormedJson of its parse', () => {
    const next = random(48);
    for (let round = 0; round < 400; round++) {
      const value = { task_id: 't', data: [tricky(next() % 40, next), { [tricky(3, next)]: tricky(next() % 12, next) }] };
      const text = JSON.stringify(value);
      expect(JSON.stringify(JSON.parse(text))).toBe(text);
      const bytes = Buffer.from(text);
      const escapes = new LoneEscapes();
      const out: Buffer[] = [];
      let held = Buffer.alloc(0);
      for (let at = 0; at < bytes.length;) {
        const size = 1 + (next() % (round % 2 === 0 ? 8 : 64));
        const text = Buffer.concat([held, bytes.subarray(at, at + size)]);
        at += size;
        const ready = escapes.scan(text, at >= bytes.length);
        out.push(Buffer.from(text.subarray(0, ready)));
        held = Buffer.from(text.subarray(ready));
      }
      expect(held.length).toBe(0);
      expect(Buffer.concat(out).toString('utf8')).toBe(wellFormedJson(JSON.parse(text)));
    }
  });
});

describe('GET /api/tasks/:id/result of a result kept on disk', () => {
  let headless: TestHeadless;
  let id: string;
  let file: string;
  const panel = (): { port: number } => ({ port: headless.server.port });
  const token = (): Record<string, string> => ({ 'x-backchannel-token': headless.server.token });

  beforeAll(async () => {
    headless = await startTestHeadless();
    // 13 past a whole number of 'abcdefghij你好🙂' (14 units): the text ends in half of 🙂, a lone surrogate.
    const bytes = 14 * Math.ceil((RESULT_INLINE_MAX_BYTES * 4) / 14) + 13;
    const handle = headless.broker.submit({
      command: fixture('big-result.mjs'),
      input: { bytes, blob: 'x\ud800 \\ud800 \\\udc00 "\\\\"' },
    });
    id = handle.id;
    await handle.finished;
    file = path.join(headless.dir, 'data', RESULTS_DIR, `${id}.json`);
  }, 60_000);
  afterAll(async () => {
    await headless?.stop();
  });

  test("the reply is byte for byte the parse path's, through both servers, and the hub neither parses nor serializes it", async () => {
    expect(headless.broker.get(id)?.resultSummary).toBeDefined();
    const stored = readFileSync(file, 'utf8');
    // The file holds lone surrogates' escapes: the reply must rewrite them as the parse path did.
    expect(stored).toContain('\\ud83d"');
    expect(stored).toContain('\\ud800');
    const before = Buffer.from(wellFormedJson(await headless.bridge.taskResult(id)));
    expect(before.toString('utf8')).toBe(wellFormedJson(JSON.parse(stored)));
    expect(before.toString('utf8')).toContain('\\ufffd"');

    const big: number[] = [];
    const { parse, stringify } = JSON;
    JSON.parse = ((text: string, ...rest: []) => {
      if (text.length > RESULT_INLINE_MAX_BYTES) big.push(text.length);
      return parse(text, ...rest);
    }) as typeof JSON.parse;
    JSON.stringify = ((value: unknown, ...rest: []) => {
      const text = stringify(value, ...rest);
      if (text !== undefined && text.length > RESULT_INLINE_MAX_BYTES) big.push(text.length);
      return text;
    }) as typeof JSON.stringify;
    let viaPanel: Raw;
    let viaControl: Raw;
    try {
      viaPanel = await get(panel(), `/api/tasks/${id}/result`, token());
      viaControl = await get({ socketPath: headless.control!.path }, `/api/tasks/${id}/result`);
    } finally {
      JSON.parse = parse;
      JSON.stringify = stringify;
    }
    expect(big).toEqual([]);
    for (const reply of [viaPanel, viaControl]) {
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(reply.headers['content-length']).toBe(String(before.length));
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.body.equals(before)).toBe(true);
    }
    // The panel's server adds its security headers to this reply as to every other.
    expect(viaPanel.headers['content-security-policy']).toBeDefined();
  });

  test('unknown and malformed ids are refused as before', async () => {
    const unknown = await get(panel(), '/api/tasks/no-such-task/result', token());
    expect(unknown.status).toBe(404);
    expect(parseBody(unknown)).toMatchObject({ error: { code: 'not_found' } });
    const malformed = await get(panel(), `/api/tasks/${'x'.repeat(500)}/result`, token());
    expect(malformed.status).toBe(400);
    expect(parseBody(malformed)).toMatchObject({ error: { code: 'invalid_request' } });
  });

  test('a result file replaced by a symlink, a directory or a file cut short is refused (null), never followed', async () => {
    const original = readFileSync(file);
    const planted = path.join(headless.dir, 'planted.json');
    writeFileSync(planted, JSON.stringify({ task_id: id, status: 'success', data: 'planted' }), { mode: 0o600 });
    try {
      rmSync(file);
      symlinkSync(planted, file);
      const viaLink = await get(panel(), `/api/tasks/${id}/result`, token());
      expect(viaLink.status).toBe(200);
      expect(viaLink.body.toString('utf8')).toBe('null');

      rmSync(file);
      mkdirSync(file);
      expect((await get(panel(), `/api/tasks/${id}/result`, token())).body.toString('utf8')).toBe('null');

      rmSync(file, { recursive: true });
      writeFileSync(file, original.subarray(0, original.length - 100), { mode: 0o600 });
      expect((await get(panel(), `/api/tasks/${id}/result`, token())).body.toString('utf8')).toBe('null');
    } finally {
      rmSync(file, { recursive: true, force: true });
      writeFileSync(file, original, { mode: 0o600 });
    }
    const again = await get(panel(), `/api/tasks/${id}/result`, token());
    expect(again.body.length).toBe(original.length);
  });
});

describe('sendResultFile', () => {
  test('a file shorter than it was when opened ends the reply cut short, never with a wrong body', async () => {
    const dir = tempDir();
    const name = path.join(dir, 'r.json');
    writeFileSync(name, '{"a":"' + 'b'.repeat(200_000) + '"}');
    const server = http.createServer((_req, res) => {
      void sendResultFile(res, { fd: openSync(name, 'r'), bytes: statSync(name).size + 10 });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await expect(get({ port }, '/')).rejects.toThrow();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('sendResultFile, a client that goes away', () => {
  test('the reply stops and the file is closed', async () => {
    const dir = tempDir();
    const name = path.join(dir, 'r.json');
    writeFileSync(name, '{"a":"' + 'b'.repeat(8 * 1024 * 1024) + '"}');
    let sent: Promise<void> | undefined;
    let fd = -1;
    const server = http.createServer((_req, res) => {
      fd = openSync(name, 'r');
      sent = sendResultFile(res, { fd, bytes: statSync(name).size });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await new Promise<void>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/' }, (res) => res.once('data', () => req.destroy()));
        req.on('close', resolve);
        req.on('error', () => {});
      });
      await sent;
      expect(() => fstatSync(fd)).toThrow(/EBADF/);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

function parseBody(reply: Raw): unknown {
  return JSON.parse(reply.body.toString('utf8'));
}
