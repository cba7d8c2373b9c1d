/**
 * Connections to a loopback TCP server, counted per local user, so another user cannot take the
 * owner's slots. A TCP connection carries no credentials (SO_PEERCRED is for Unix sockets, and Node
 * does not expose it); on Linux the kernel still says which user owns the other end: the client's
 * socket is a line of /proc/net/tcp whose uid column is its owner's, as identd reads it. Where that
 * file cannot be read (macOS, Windows, a kernel without it) every connection counts as the owner's,
 * as before: one cap.
 */
import { readFile } from 'node:fs/promises';
import { endianness } from 'node:os';
import type { Server, Socket } from 'node:net';

export interface PeerLimits {
  /** Connections the owner's processes (or, where users cannot be told apart, everyone) hold at most. */
  readonly owner: number;
  /** Connections each other user holds at most. */
  readonly perOtherUser: number;
  /** Connections all other users together hold at most. */
  readonly allOtherUsers: number;
}

/** Where the kernel lists IPv4 TCP sockets; a parameter so tests can point it at a file. */
export const PROC_NET_TCP = '/proc/net/tcp';

/**
 * Caps `server`'s connections per peer user (see the header); more are closed as they come. At most
 * `owner + allOtherUsers` wait for their lookup: past that, one waiting is closed to make room, the
 * oldest that has sent nothing yet (else the oldest). A flood of silent reconnecting connections
 * thus closes its own, not the owner's request, whose bytes came with it (X13). Replaces
 * `server.maxConnections`.
 */
export function capConnectionsPerUser(
  server: Server,
  limits: PeerLimits,
  {
    ownUid = process.getuid?.(),
    table = PROC_NET_TCP,
    lookup = new PeerLookup(table),
  }: { ownUid?: number; table?: string; lookup?: PeerLookup } = {},
): void {
  const held = new Map<number | 'owner', number>();
  let others = 0;
  // Insertion order is arrival order: the first silent one found is the oldest.
  const waiting = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    if (waiting.size >= limits.owner + limits.allOtherUsers) {
      const victim = [...waiting].find((s) => s.bytesRead === 0) ?? waiting.values().next().value!;
      waiting.delete(victim);
      victim.destroy();
    }
    waiting.add(socket);
    void lookup.uidOf(socket).then((uid) => {
      waiting.delete(socket);
      if (socket.destroyed) return;
      const user = uid === undefined || uid === ownUid ? 'owner' : uid;
      const count = held.get(user) ?? 0;
      const full = user === 'owner' ? count >= limits.owner : count >= limits.perOtherUser || others >= limits.allOtherUsers;
      if (full) return void socket.destroy();
      held.set(user, count + 1);
      if (user !== 'owner') others += 1;
      socket.once('close', () => {
        const left = (held.get(user) ?? 1) - 1;
        if (left === 0) held.delete(user);
        else held.set(user, left);
        if (user !== 'owner') others -= 1;
      });
    });
  });
}

/**
 * The uid owning the other end of a loopback TCP connection. One read of the table is in flight at a
 * time, and the connections that arrive meanwhile share the next: a busy host's table lists tens of
 * thousands of sockets (TIME_WAIT among them), megabytes the kernel hands out a page per read, so a
 * read takes 100 ms or more, and a flood must cost a few reads, not one each.
 */
export class PeerLookup {
  private waiting: Array<{ socket: Socket; resolve: (uid: number | undefined) => void }> = [];
  private reading = false;
  private unreadable = false;

  constructor(
    private readonly table: string,
    private readonly read: (table: string) => Promise<string> = (table) => readFile(table, 'latin1'),
  ) {}

  uidOf(socket: Socket): Promise<number | undefined> {
    if (this.unreadable || socket.remoteFamily !== 'IPv4') return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting.push({ socket, resolve });
      if (!this.reading) {
        this.reading = true;
        setImmediate(() => void this.readBatches());
      }
    });
  }

  private async readBatches(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting;
      this.waiting = [];
      let text = '';
      try {
        text = await this.read(this.table);
      } catch {
        this.unreadable = true;
      }
      // The client's socket: its local end is our remote one, and the other way round.
      const keys = batch.map(({ socket: { remoteAddress, remotePort, localAddress, localPort } }) =>
        remoteAddress && remotePort && localAddress && localPort
          ? { client: endpointKey(remoteAddress, remotePort), server: endpointKey(localAddress, localPort) }
          : undefined,
      );
      const owners = socketOwners(text, new Set(keys.flatMap((key) => (key ? [key.server] : []))));
      batch.forEach(({ resolve }, i) => resolve(keys[i] && owners.get(`${keys[i].client} ${keys[i].server}`)));
    }
    this.reading = false;
  }
}

/**
 * "local remote" (as /proc/net/tcp spells them) → uid, for every socket the table lists, or only for
 * those whose remote end is one of `remotes` (found by search, not by parsing every line).
 */
export function socketOwners(text: string, remotes?: ReadonlySet<string>): Map<string, number> {
  const owners = new Map<string, number>();
  const add = (line: string) => {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid …
    const fields = line.trim().split(/\s+/);
    const uid = Number(fields[7]);
    if (fields.length > 7 && /^\d+:$/.test(fields[0]!) && Number.isInteger(uid)) owners.set(`${fields[1]} ${fields[2]}`, uid);
  };
  if (!remotes) {
    for (const line of text.split('\n')) add(line);
    return owners;
  }
  for (const remote of remotes) {
    const needle = ` ${remote} `;
    for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
      const lineEnd = text.indexOf('\n', at);
      add(text.slice(text.lastIndexOf('\n', at) + 1, lineEnd === -1 ? undefined : lineEnd));
    }
  }
  return owners;
}

/** An IPv4 address and port as /proc/net/tcp writes them: the address as the host's 32-bit word, the port big-endian. */
export function endpointKey(address: string, port: number): string {
  const bytes = address.split('.').map(Number);
  if (endianness() === 'LE') bytes.reverse();
  const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');
  return `${bytes.map((b) => hex(b, 2)).join('')}:${hex(port, 4)}`;
}
