/**
 * Issue 23, a note of the red team: the panel's port had no connection cap (a flood of idle
 * connections reached 17,500 descriptors in the hub). Now it holds at most MAX_PANEL_CONNECTIONS and
 * closes the rest as they come; a request without the token is answered and its connection closed,
 * so it holds no slot; once the flood is gone the owner is served. Issue 36, X13: another local user
 * (nobody, as root runs the tests) holding more than 256 connections no longer locks the owner out:
 * other users get their own, smaller cap (PANEL_PEER_LIMITS).
 */
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import { MAX_PANEL_CONNECTIONS, PANEL_PEER_LIMITS } from '../../../src/hub/headless/server.js';
import { waitFor } from '../../helpers/core.js';
import { cannotRunAsNobody, runAsNobody } from '../../helpers/processes.js';
import { hubEnv, startHub } from '../control/hub-process.js';

const FLOOD = MAX_PANEL_CONNECTIONS + 200;

describe('the panel port under a connection flood', () => {
  test(`holds at most ${MAX_PANEL_CONNECTIONS} connections, closes the rest, and serves the owner once they are gone`, async () => {
    const hub = await startHub(hubEnv());
    const url = new URL(hub.url);
    const port = Number(url.port);
    const fds = () => readdirSync(`/proc/${hub.child.pid}/fd`).length;
    const before = fds();

    // Without the token: answered (401) and the connection is closed, not kept alive.
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(`GET /api/tasks HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
      let text = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
    });
    expect(refused).toMatch(/^HTTP\/1\.1 401 /);
    expect(refused.toLowerCase()).toContain('connection: close');

    const sockets: Socket[] = [];
    let closedByHub = 0;
    for (let i = 0; i < FLOOD; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.on('close', () => (closedByHub += 1));
      sockets.push(socket);
    }
    try {
      await waitFor(() => closedByHub >= FLOOD - MAX_PANEL_CONNECTIONS, 'the hub to close the connections past its cap', 30_000, 50);
      expect(closedByHub).toBeLessThanOrEqual(FLOOD - MAX_PANEL_CONNECTIONS + 5);
      expect(fds()).toBeLessThan(before + MAX_PANEL_CONNECTIONS + 20);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    // Once the flood is gone, the owner's requests are served again.
    const answer = await waitFor(
      async () => {
        const response = await fetch(`http://127.0.0.1:${port}/api/tasks`, {
          headers: { 'x-backchannel-token': url.searchParams.get('token')! },
        }).catch(() => undefined);
        return response?.ok ? response : undefined;
      },
      'the owner to be served',
      20_000,
      100,
    );
    expect(answer.status).toBe(200);
  });

  test.skipIf(cannotRunAsNobody)(
    `another user holding ${MAX_PANEL_CONNECTIONS + 44} connections keeps ${PANEL_PEER_LIMITS.perOtherUser} of them, and the owner is served meanwhile (X13)${cannotRunAsNobody ? ` (skipped: ${cannotRunAsNobody})` : ''}`,
    async () => {
      const hub = await startHub(hubEnv());
      const url = new URL(hub.url);
      const port = Number(url.port);
      const fds = () => readdirSync(`/proc/${hub.child.pid}/fd`).length;
      const before = fds();
      const flood = MAX_PANEL_CONNECTIONS + 44;
      // nobody opens `flood` connections and holds them; it prints how many are open and how many the hub closed.
      const holder = `
        const net = require('node:net');
        let open = 0, closed = 0;
        const say = () => process.stdout.write(JSON.stringify({ open, closed }) + '\\n');
        for (let i = 0; i < ${flood}; i++) {
          const socket = net.connect(${port}, '127.0.0.1');
          socket.on('connect', () => { open += 1; say(); });
          socket.on('close', () => { open -= 1; closed += 1; say(); });
          socket.on('error', () => {});
        }
        setInterval(() => {}, 60_000);`;
      const nobody = runAsNobody(holder, { open: 0, closed: 0 });
      try {
        // The hub closes what nobody holds past its cap (idle connections it keeps close after the
        // 10 s headers timeout too, so only "at least" is certain).
        await waitFor(
          () => nobody.last().closed >= flood - PANEL_PEER_LIMITS.perOtherUser,
          "the hub to close nobody's connections past its cap",
          30_000,
          50,
        );
        expect(fds()).toBeLessThan(before + PANEL_PEER_LIMITS.perOtherUser + 20);
        // nobody still runs and is connected, and the owner is served at once: not after the flood.
        expect(nobody.running()).toBe(true);
        const response = await fetch(`http://127.0.0.1:${port}/api/tasks`, {
          headers: { 'x-backchannel-token': url.searchParams.get('token')! },
        });
        expect(response.status).toBe(200);
      } finally {
        await nobody.stop();
      }
    },
  );
});
