/**
 * Connections counted per local user on a real loopback server: the owner of a connection's other end
 * is read from /proc/net/tcp; another user past its cap is closed, and where the table cannot be read
 * everyone shares the owner's cap; a flood costs a few reads of the table, one at a time, however
 * slow each is. (As another real user: test/hub/headless/connection-cap.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { capConnectionsPerUser, endpointKey, PeerLookup, socketOwners, type PeerLimits } from '../../src/loopback/peer-user.js';
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

  test('connections that arrive while the table is read share the next read: one read at a time', async () => {
    // A CI host's table listed 28,000 sockets (TIME_WAIT): each read took 100 ms and more, and one
    // read per arriving batch, all at once, kept a flood of 456 waiting past 30 s.
    let reads = 0;
    let inFlight = 0;
    let most = 0;
    const lookup = new PeerLookup('/proc/net/tcp', async (table) => {
      reads += 1;
      most = Math.max(most, ++inFlight);
      await delay(50);
      inFlight -= 1;
      return readFile(table, 'latin1');
    });
    const uids: Array<Promise<number | undefined>> = [];
    const port = await listening((server) => server.on('connection', (socket) => uids.push(lookup.uidOf(socket))));
    const waves = 4;
    const perWave = 10;
    for (let wave = 0; wave < waves; wave++) {
      for (let i = 0; i < perWave; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        clients.push(socket);
      }
      await delay(20);
    }
    await waitFor(() => uids.length === waves * perWave, 'every connection to arrive', 20_000, 10);
    expect(await Promise.all(uids)).toEqual(Array(waves * perWave).fill(process.getuid!()));
    expect(most).toBe(1);
    expect(reads).toBeLessThanOrEqual(waves + 1);
  });

  test('a flood of silent connections waiting for their lookup closes its own, not the owner’s request (X13)', async () => {
    // The table is read once the test says so; it names the flood's ends as nobody's, the owner's as ours.
    const owner = process.getuid!();
    const flooders: Socket[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const lookup = new PeerLookup('/proc/net/tcp', async () => {
      await gate;
      const line = (socket: Socket, uid: number) =>
        `   0: ${endpointKey(socket.localAddress!, socket.localPort!)} ${endpointKey('127.0.0.1', port)} 01 00000000:00000000 00:00000000 00000000 ${uid} 0 1 1`;
      return [
        '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid',
        ...flooders.map((s) => line(s, 65534)),
        line(mine, owner),
      ].join('\n');
    });
    let arrived = 0;
    let heard = 0;
    const server = createServer((socket) => socket.on('data', (data) => ((heard += 1), socket.write(data))));
    servers.push(server);
    server.on('connection', () => (arrived += 1));
    capConnectionsPerUser(server, LIMITS, { ownUid: owner, lookup });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const silent = (count: number) => {
      for (let i = 0; i < count; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        flooders.push(socket);
        clients.push(socket);
      }
    };
    // As many silent connections wait for the lookup as may (owner + allOtherUsers), then the owner's request comes.
    silent(LIMITS.owner + LIMITS.allOtherUsers);
    await waitFor(() => arrived === LIMITS.owner + LIMITS.allOtherUsers, 'the flood to arrive');
    const mine = connect(port, '127.0.0.1');
    clients.push(mine);
    let closed = false;
    mine.on('close', () => (closed = true));
    mine.write('GET /');
    await waitFor(() => heard === 1 || closed, 'the owner’s request to be read');
    silent(10);
    await waitFor(() => arrived === LIMITS.owner + LIMITS.allOtherUsers + 11, 'the rest of the flood to arrive');
    release();
    const echoed = new Promise<string>((resolve) => mine.on('data', (data) => resolve(data.toString())));
    await waitFor(
      () => flooders.filter((s) => s.destroyed).length >= flooders.length - LIMITS.perOtherUser || closed,
      'the flood to be closed',
    );
    expect(closed).toBe(false);
    expect(await echoed).toBe('GET /');
  });

  test('the search for one endpoint finds what the full parse finds for it', async () => {
    const port = await listening();
    const socket = connect(port, '127.0.0.1');
    clients.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    const server = endpointKey('127.0.0.1', port);
    const text = readFileSync('/proc/net/tcp', 'latin1');
    const found = socketOwners(text, new Set([server]));
    const all = [...socketOwners(text)].filter(([key]) => key.split(' ').includes(server));
    expect([...found].sort()).toEqual(all.sort());
    expect(found.get(`${endpointKey(socket.localAddress!, socket.localPort!)} ${server}`)).toBe(process.getuid!());
  });
});
