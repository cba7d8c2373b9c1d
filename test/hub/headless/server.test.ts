/**
 * `backchannel serve` answers only the person who started it: token on every request, loopback
 * Host only (DNS rebinding), no cross-origin calls and no CORS.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_INPUT_BYTES, MAX_SUBMIT_BYTES } from '../../../src/model/limits.js';
import { startTestHeadless, type TestHeadless } from '../../helpers/panel.js';

let headless: TestHeadless;
let port: number;
let token: string;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A raw request, so the test controls Host and Origin (fetch would not let it). */
function request(path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { host: `127.0.0.1:${port}`, ...options.headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const withToken = (extra: Record<string, string> = {}): Record<string, string> => ({ 'x-backchannel-token': token, ...extra });

beforeAll(async () => {
  headless = await startTestHeadless();
  port = headless.server.port;
  token = headless.server.token;
});
afterAll(async () => {
  await headless?.stop();
});

describe('token', () => {
  test('a request without the token is refused with 401', async () => {
    const reply = await request('/api/tasks');
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'invalid_request' } });
  });

  test('a wrong token is refused with 401, also for the page and the event stream', async () => {
    expect((await request('/api/info', { headers: { 'x-backchannel-token': 'f'.repeat(64) } })).status).toBe(401);
    expect((await request('/?token=nope')).status).toBe(401);
    expect((await request('/panel.js')).status).toBe(401);
    expect((await request('/api/events?token=nope')).status).toBe(401);
  });

  test('a browser opening the page without the token gets a short page saying what to do, still 401', async () => {
    const reply = await request('/', { headers: { accept: 'text/html' } });
    expect(reply.status).toBe(401);
    expect(reply.headers['content-type']).toContain('text/html');
    expect(reply.body).toContain('open the URL `backchannel serve` printed');
    expect(reply.headers['content-security-policy']).toContain("default-src 'none'");
  });

  test('the token in a header or in the query is accepted', async () => {
    expect((await request('/api/info', { headers: withToken() })).status).toBe(200);
    expect((await request(`/api/info?token=${token}`)).status).toBe(200);
  });

  test('the token is new on every start', async () => {
    const other = await startTestHeadless();
    try {
      expect(other.server.token).not.toBe(token);
      expect(other.server.token).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      await other.stop();
    }
  });
});

describe('Host header (DNS rebinding)', () => {
  test('a foreign host name is refused with 421 even with the token', async () => {
    const reply = await request('/api/info', { headers: withToken({ host: `evil.example:${port}` }) });
    expect(reply.status).toBe(421);
  });

  test('a loopback name with another port is refused', async () => {
    expect((await request('/api/info', { headers: withToken({ host: `127.0.0.1:${port + 1}` }) })).status).toBe(421);
  });

  test('localhost and [::1] on our port are accepted', async () => {
    expect((await request('/api/info', { headers: withToken({ host: `localhost:${port}` }) })).status).toBe(200);
    expect((await request('/api/info', { headers: withToken({ host: `[::1]:${port}` }) })).status).toBe(200);
  });
});

describe('cross-origin requests', () => {
  test('a foreign Origin is refused with 403 even with the token', async () => {
    const reply = await request('/api/tasks', {
      method: 'POST',
      headers: withToken({ origin: 'http://evil.example', 'content-type': 'application/json' }),
      body: '{"command":"true"}',
    });
    expect(reply.status).toBe(403);
    expect(reply.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('Sec-Fetch-Site: cross-site is refused', async () => {
    expect((await request('/api/info', { headers: withToken({ 'sec-fetch-site': 'cross-site' }) })).status).toBe(403);
  });

  test('our own Origin is accepted', async () => {
    expect((await request('/api/info', { headers: withToken({ origin: `http://127.0.0.1:${port}` }) })).status).toBe(200);
  });

  test('no response grants CORS, not even a preflight', async () => {
    const preflight = await request('/api/tasks', {
      method: 'OPTIONS',
      headers: withToken({ origin: 'http://evil.example', 'access-control-request-method': 'POST' }),
    });
    expect(preflight.status).toBeGreaterThanOrEqual(400);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    const ok = await request('/api/info', { headers: withToken() });
    expect(ok.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('a form-style POST (not JSON) is refused', async () => {
    const reply = await request('/api/tasks', {
      method: 'POST',
      headers: withToken({ 'content-type': 'text/plain' }),
      body: '{"command":"true"}',
    });
    expect(reply.status).toBe(415);
  });
});

describe('what is served', () => {
  test('the page carries a strict CSP, no referrer, and the token in its asset URLs', async () => {
    const reply = await request(`/?token=${token}`);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-security-policy']).toContain("script-src 'self'");
    expect(reply.headers['content-security-policy']).not.toContain('unsafe');
    expect(reply.headers['referrer-policy']).toBe('no-referrer');
    expect(reply.headers['x-frame-options']).toBe('DENY');
    expect(reply.body).toContain(`?token=${token}`);
    expect(reply.body).not.toContain('__TOKEN__');
  });

  test('paths outside the panel are not served', async () => {
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/etc/passwd', '/dist/renderer/panel.js']) {
      const reply = await request(`${path}?token=${token}`);
      expect(reply.status, path).toBe(404);
    }
  });

  test('the server listens on 127.0.0.1 only', () => {
    expect(headless.url.startsWith(`http://127.0.0.1:${port}/?token=`)).toBe(true);
  });

  test('a body over the one submission limit is refused with a message naming it; the input limit is the same as run', async () => {
    const body = JSON.stringify({ command: 'node', input: 'x'.repeat(MAX_SUBMIT_BYTES) });
    const reply = await request('/api/tasks', { method: 'POST', headers: withToken({ 'content-type': 'application/json' }), body });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('68 MiB') } });
    const overInput = JSON.stringify({ command: 'node', input: 'x'.repeat(MAX_INPUT_BYTES) });
    const refused = await request('/api/tasks', {
      method: 'POST',
      headers: withToken({ 'content-type': 'application/json' }),
      body: overInput,
    });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error.message).toMatch(/over the 64 MiB limit/);
  });

  test('unknown API routes are 404 with the shared error shape', async () => {
    const reply = await request('/api/nope', { headers: withToken() });
    expect(reply.status).toBe(404);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'not_found' } });
  });
});
