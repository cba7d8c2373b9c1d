/**
 * Issue 48 §2 (the hub's answers under load): a big JSON reply (a page of 50 tasks, ~140 KB) is sent
 * in chunks of a few KB, never as one string or Buffer over V8's large-object size (each cost the hub
 * a memory mapping, and a wait for the lock its spawner's fork() holds) — and the bytes are exactly
 * what `wellFormedJson` made of the value before: same text, same lone-surrogate rewriting, same
 * Content-Length, through a real HTTP server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { joinedChunks, wellFormedJsonPieces } from '../../../src/hub/http/json-pieces.js';
import { sendJson } from '../../../src/hub/http/responses.js';
import { wellFormedJson } from '../../../src/model/well-formed.js';

/** A task snapshot as a page carries it (~2.8 KB of JSON), with text that must be escaped. */
function taskLike(i: number): Record<string, unknown> {
  return {
    id: `task-${i}`,
    label: `label ${i} "quoted" \\ back \n`,
    state: i % 3 === 0 ? 'running' : 'succeeded',
    command: '/usr/bin/node',
    args: ['agent.mjs', `--n=${i}`],
    cwd: '/home/someone/project',
    attempt: 1,
    maxAttempts: 1,
    createdAt: new Date(Date.UTC(2026, 11, 8, 0, 0, i)).toISOString(),
    counters: { malformed: 0, rejected: 0, ignored: 0 },
    result: { type: 'success', data: { text: 'x'.repeat(2_500), n: i }, meta: { attempts: 1 } },
    tags: { source: 'cli' },
  };
}

const page = { tasks: Array.from({ length: 50 }, (_, i) => taskLike(i)), total: 1_000, next: '2026-12-08T00:00:49.000Z~task-49' };

/** Values whose text the pieces must reproduce exactly, each for a rule of `JSON.stringify` or of the rewriting. */
const cases: Array<[string, unknown]> = [
  ['a page of 50 tasks', page],
  [
    'a lone surrogate in a value, a key and a list',
    { ['k\ud800']: 'a\udc00b', list: ['\ud83d', '\ud83d\ude00', 'ok'], pair: '\ud83d\ude00' },
  ],
  ['an escaped backslash before a surrogate-like text', { text: '\\ud800 is text', deep: [{ t: '\\\\\ud800' }] }],
  [
    'members JSON leaves out, items it writes as null',
    { a: undefined, f: () => 1, s: Symbol('x'), list: [undefined, () => 1, Symbol('y'), 1] },
  ],
  [
    'toJSON, dates, numbers JSON cannot write',
    { when: new Date(0), custom: { toJSON: () => ({ swapped: true }) }, n: [NaN, Infinity, -0] },
  ],
  [
    'toJSON given its key, in an object and a list',
    { keyed: { toJSON: (key: string) => `key ${key}` }, list: [{ toJSON: (key: string) => ({ at: key }) }] },
  ],
  [
    'an object without a prototype and a class instance',
    { bare: Object.assign(Object.create(null) as object, { x: 1 }), instance: new URL('http://a/') },
  ],
  ['nested lists and empty ones', [[], {}, [[1, [2]], { a: [{ b: [] }] }], null]],
  ['scalars', 'just a string'],
  ['null', null],
  ['nothing', undefined],
  ['a number', 42],
];

describe('wellFormedJsonPieces', () => {
  test.each(cases)('%s: the pieces joined are wellFormedJson’s text', (_name, value) => {
    expect(wellFormedJsonPieces(value).join('')).toBe(wellFormedJson(value));
  });

  test('a page is cut between its tasks: no piece is near V8’s large-object size', () => {
    const pieces = wellFormedJsonPieces(page);
    expect(pieces.join('').length).toBeGreaterThan(128 * 1024);
    expect(Math.max(...pieces.map((piece) => piece.length))).toBeLessThan(4 * 1024);
  });

  test('joinedChunks: runs of at least the size asked, the last one shorter, the same bytes', () => {
    const pieces = wellFormedJsonPieces(page);
    const chunks = joinedChunks(pieces, 16 * 1024);
    expect(Buffer.concat(chunks).toString('utf8')).toBe(pieces.join(''));
    for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBeGreaterThanOrEqual(16 * 1024);
    expect(Math.max(...chunks.map((chunk) => chunk.length))).toBeLessThan(20 * 1024);
    expect(joinedChunks(['{}'], 16 * 1024).map(String)).toEqual(['{}']);
  });
});

describe('sendJson over HTTP', () => {
  let server: http.Server;
  let port: number;
  const values: Record<string, unknown> = { '/page': page, '/small': { ok: true }, '/surrogates': cases[1]![1], '/nothing': undefined };
  /** Every Buffer the server wrote to its sockets for a reply's body. */
  const written: Buffer[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const write = res.write.bind(res);
      const end = res.end.bind(res);
      res.write = ((chunk: Buffer, ...rest: never[]) => (written.push(chunk), write(chunk, ...rest))) as typeof res.write;
      res.end = ((chunk?: Buffer, ...rest: never[]) => (chunk && written.push(chunk), end(chunk as Buffer, ...rest))) as typeof res.end;
      sendJson(res, 200, values[req.url ?? '']);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function get(path: string): Promise<{ length: number; body: string }> {
    return new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ length: Number(res.headers['content-length']), body: Buffer.concat(chunks).toString('utf8') }));
        })
        .on('error', reject);
    });
  }

  test.each(['/page', '/small', '/surrogates', '/nothing'])(
    '%s: the body and its Content-Length are what wellFormedJson gave',
    async (path) => {
      written.length = 0;
      const { length, body } = await get(path);
      const expected = wellFormedJson(values[path] ?? null);
      expect(body).toBe(expected);
      expect(length).toBe(Buffer.byteLength(expected));
    },
  );

  test('a page goes out in chunks well under 128 KiB, never one Buffer of its whole size', async () => {
    written.length = 0;
    const { body } = await get('/page');
    expect(body.length).toBeGreaterThan(128 * 1024);
    expect(written.length).toBeGreaterThan(5);
    expect(Math.max(...written.map((chunk) => chunk.length))).toBeLessThan(20 * 1024);
  });
});
