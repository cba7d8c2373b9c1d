/**
 * Who holds the gateway's connections (src/gateway/connections.ts), tried from outside over real
 * sockets: another local user without the key cannot take the owner's `max_connections`, nor close
 * the owner's new connection (as `nobody`, since the tests run as root).
 */
import net from 'node:net';
import { describe, expect, test } from 'vitest';
import { tempDir, waitFor } from '../helpers/core.js';
import { cannotRunAsNobody, runAsNobody } from '../helpers/processes.js';
import { raw, standinModels, startTestGateway, userMessage } from './helpers.js';
import { UNAUTHENTICATED_CONNECTIONS } from '../../src/gateway/connections.js';

const KEY = 'k-owner';

async function gateway(extra: Record<string, unknown> = {}) {
  const dir = tempDir('bc-gwconn-');
  return startTestGateway({ models: standinModels(dir), api_key: KEY, max_connections: 2, ...extra }, { dir });
}

/** A raw connection that sends `requests` (keep-alive) and records what comes back and whether it closed. */
function connection(port: number, requests: string[] = []) {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  let closed = false;
  const opened = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => {});
  socket.on('close', () => (closed = true));
  void opened.then(() => {
    for (const request of requests) socket.write(request);
  });
  return { socket, opened, text: () => text, closed: () => closed };
}

const health = (port: number, headers = '') =>
  `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n${headers}\r\n`;
const owner = { Authorization: `Bearer ${KEY}` };

describe('connections without the key', () => {
  test('keep-alive GET /health without the key is answered once and closed; the owner gets in past a full max_connections of them', async () => {
    const gw = await gateway();
    // The attack: more keep-alive health probes than max_connections, then a crowd of silent sockets.
    const probes = [0, 1, 2].map(() => connection(gw.port, [health(gw.port)]));
    await waitFor(() => probes.every((p) => p.closed()), 'the server to close each unauthenticated keep-alive connection');
    for (const probe of probes) {
      expect(probe.text()).toMatch(/^HTTP\/1\.1 200/);
      expect(probe.text()).toMatch(/\r\nConnection: close\r\n/i);
    }
    const silent = Array.from({ length: UNAUTHENTICATED_CONNECTIONS * 2 }, () => connection(gw.port));
    await Promise.all(silent.map((c) => c.opened));
    await waitFor(() => silent.filter((s) => s.closed()).length >= UNAUTHENTICATED_CONNECTIONS, 'the oldest silent sockets to be closed');

    const res = await raw(`${gw.baseURL}/chat/completions`, { model: 'echo', messages: userMessage('mine') }, { headers: owner });
    expect(res.status).toBe(200);
    expect(res.json.choices[0].message.content).toBe('Hello: mine');
    for (const s of silent) s.socket.destroy();
  });

  test('a connection that sent the key keeps alive; beyond max_connections such connections get a 503 and are closed', async () => {
    const gw = await gateway();
    const keyed = [0, 1].map(() => connection(gw.port, [health(gw.port, `Authorization: Bearer ${KEY}\r\n`)]));
    await waitFor(() => keyed.every((c) => /^HTTP\/1\.1 200/.test(c.text())), 'both owner connections to be answered');
    expect(keyed.some((c) => c.closed())).toBe(false);
    expect(keyed[0]!.text()).toMatch(/\r\nConnection: keep-alive\r\n/i);

    const third = connection(gw.port, [health(gw.port, `Authorization: Bearer ${KEY}\r\n`)]);
    await waitFor(() => third.closed(), 'the third owner connection to be refused and closed');
    expect(third.text()).toMatch(/^HTTP\/1\.1 503/);
    expect(third.text()).toContain('"code":"too_many_connections"');

    keyed[0]!.socket.destroy();
    await waitFor(async () => (await raw(`${gw.baseURL}/models`, undefined, { headers: owner })).status === 200, 'a slot to free');
    keyed[1]!.socket.destroy();
  });
});

describe('a reconnecting flood without the key (X14)', () => {
  test.skipIf(cannotRunAsNobody)(
    `another user's new connections close their own, not the owner's new one that has not sent its request yet${cannotRunAsNobody ? ` (skipped: ${cannotRunAsNobody})` : ''}`,
    async () => {
      const gw = await gateway();
      // The owner's client has connected and not written yet (a busy client, a connection opened ahead).
      const mine = connection(gw.port);
      await mine.opened;
      // nobody opens `flood` silent connections after it: more than the keyless pool holds.
      const flood = UNAUTHENTICATED_CONNECTIONS + 24;
      const nobody = runAsNobody(
        `const net = require('node:net');
        let open = 0, closed = 0;
        const say = () => process.stdout.write(JSON.stringify({ open, closed }) + '\\n');
        for (let i = 0; i < ${flood}; i++) {
          const socket = net.connect(${gw.port}, '127.0.0.1');
          socket.on('connect', () => { open += 1; say(); });
          socket.on('close', () => { open -= 1; closed += 1; say(); });
          socket.on('error', () => {});
        }
        setInterval(() => {}, 60_000);`,
        { open: 0, closed: 0 },
      );
      try {
        await waitFor(
          () => nobody.last().closed >= flood - UNAUTHENTICATED_CONNECTIONS,
          "the gateway to close nobody's connections past the pool",
        );
        expect(mine.closed(), "the owner's connection").toBe(false);
        mine.socket.write(
          `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`,
        );
        await waitFor(() => mine.closed(), 'the owner’s answer');
        expect(mine.text()).toMatch(/^HTTP\/1\.1 200/);
        expect(nobody.last().open).toBeLessThanOrEqual(UNAUTHENTICATED_CONNECTIONS);
      } finally {
        await nobody.stop();
      }
    },
  );

  // A red team saw about 5 % of the owner's new connections dropped under such a flood. Measured here
  // (docs/reliability.md, X14): none dropped, with 100 loops or 400.
  test(
    'every new owner connection is answered while 100 keyless loops reconnect, a quarter of them slowloris',
    // 30 s on a quiet machine; beside two CPU spinners and the rest of the suite (load average 36 on
    // two cores) it passed 100 s, so the bound is generous: what is checked is the count, not the time.
    { timeout: 300_000 },
    async () => {
      const gw = await gateway({ max_connections: 8 });
      let flooding = true;
      let floodConnections = 0;
      const started = Date.now();
      // Connects, sends two pipelined keyless requests (or 20 bytes of headers and nothing more), waits for the close, again.
      const loop = async (slowloris: boolean) => {
        // The flood lasts as long as the owner's connections are tried (bounded: the test's own timeout is 300 s).
        while (flooding && Date.now() - started < 280_000) {
          const c = connection(gw.port, slowloris ? [] : [health(gw.port) + health(gw.port)]);
          const closed = new Promise<void>((resolve) => c.socket.once('close', () => resolve()));
          await Promise.race([c.opened, closed]);
          if (slowloris && !c.closed()) c.socket.write(health(gw.port).slice(0, 20));
          await closed;
          floodConnections++;
        }
      };
      const loops = Array.from({ length: 100 }, (_, i) => loop(i % 4 === 0));
      await waitFor(() => floodConnections >= 200, 'the flood to be under way', 30_000);
      const outcome = { answered: 0, closed: 0, timedOut: 0 };
      for (let i = 0; i < 100; i++) {
        const c = connection(gw.port, [
          `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`,
        ]);
        let timedOut = false;
        c.socket.setTimeout(10_000, () => {
          timedOut = true;
          c.socket.destroy();
        });
        await new Promise<void>((resolve) => (c.closed() ? resolve() : c.socket.once('close', () => resolve())));
        if (/^HTTP\/1\.1 200/.test(c.text())) outcome.answered++;
        else if (timedOut) outcome.timedOut++;
        else outcome.closed++;
      }
      flooding = false;
      await Promise.all(loops);
      expect(outcome, `owner connections under ${floodConnections} flood connections`).toEqual({ answered: 100, closed: 0, timedOut: 0 });
    },
  );
});
