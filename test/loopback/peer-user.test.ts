/**
 * Connections counted per local user on a real loopback server: the owner of a connection's other end
 * is read from /proc/net/tcp; another user past its cap is closed, and where the table cannot be read
 * everyone shares the owner's cap. (As another real user: test/hub/headless/connection-cap.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { capConnectionsPerUser, endpointKey, socketOwners, type PeerLimits } from '../../src/loopback/peer-user.js';
import { waitFor } from '../helpers/core.js';

const servers: Server[] = [];
const clients: Socket[] = [];
afterEach(async () => {
  for (const socket of clients.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function listening(setup: (server: Server) => void = () => {}): Promise<number> {
  const server = createServer(() => {});
  servers.push(server);
  setup(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Opens `count` connections; resolves with how many of them the server closed, once `closed` have been. */
async function flood(port: number, count: number, closed: number): Promise<{ closedByServer: () => number }> {
  let closedByServer = 0;
  for (let i = 0; i < count; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('close', () => (closedByServer += 1));
    clients.push(socket);
  }
  await waitFor(() => closedByServer >= closed, `the server to close ${closed} connections`, 20_000, 20);
  return { closedByServer: () => closedByServer };
}

const LIMITS: PeerLimits = { owner: 3, perOtherUser: 2, allOtherUsers: 2 };

describe.skipIf(process.platform !== 'linux')('connections per local user', () => {
  test("the table names this process's user as the owner of its end of a loopback connection", async () => {
    const port = await listening();
    const socket = connect(port, '127.0.0.1');
    clients.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    const key = `${endpointKey(socket.localAddress!, socket.localPort!)} ${endpointKey('127.0.0.1', port)}`;
    expect(socketOwners(readFileSync('/proc/net/tcp', 'latin1')).get(key)).toBe(process.getuid!());
  });

  test('another user holds at most its own cap; the rest are closed as they come', async () => {
    // This process plays "another user": the owner is someone else.
    const port = await listening((server) => capConnectionsPerUser(server, LIMITS, { ownUid: process.getuid!() + 1 }));
    const result = await flood(port, 6, 6 - LIMITS.perOtherUser);
    expect(result.closedByServer()).toBe(6 - LIMITS.perOtherUser);
  });

  test("the owner's connections are capped by the owner's limit", async () => {
    const port = await listening((server) => capConnectionsPerUser(server, LIMITS));
    const result = await flood(port, 6, 6 - LIMITS.owner);
    expect(result.closedByServer()).toBe(6 - LIMITS.owner);
  });

  test("where the table cannot be read, everyone shares the owner's cap", async () => {
    const port = await listening((server) =>
      capConnectionsPerUser(server, LIMITS, { ownUid: process.getuid!() + 1, table: '/nonexistent/proc-net-tcp' }),
    );
    const result = await flood(port, 6, 6 - LIMITS.owner);
    expect(result.closedByServer()).toBe(6 - LIMITS.owner);
  });
});
