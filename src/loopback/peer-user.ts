/**
 * Connections to a loopback TCP server, counted per local user, so another user cannot take the
 * owner's slots. A TCP connection carries no credentials (SO_PEERCRED is for Unix sockets, and Node
 * does not expose it); on Linux the kernel still says which user owns the other end: the client's
 * socket is a line of /proc/net/tcp whose uid column is its owner's, as identd reads it. Lookups of
 * the connections that arrive together share one read of that file. Where it cannot be read
 * (macOS, Windows, a kernel without it) every connection counts as the owner's, as before: one cap.
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
 * Caps `server`'s connections per peer user (see the header); more are closed as they come, and so are
 * those past `owner + allOtherUsers` still waiting for their lookup. Replaces `server.maxConnections`.
 */
export function capConnectionsPerUser(
  server: Server,
  limits: PeerLimits,
  { ownUid = process.getuid?.(), table = PROC_NET_TCP }: { ownUid?: number; table?: string } = {},
): void {
  const held = new Map<number | 'owner', number>();
  let others = 0;
  const lookup = new PeerLookup(table);
  let unknown = 0;
  server.on('connection', (socket: Socket) => {
    if (unknown >= limits.owner + limits.allOtherUsers) return void socket.destroy();
    unknown += 1;
    void lookup.uidOf(socket).then((uid) => {
      unknown -= 1;
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

/** The uid owning the other end of a loopback TCP connection, from one read of /proc/net/tcp per batch. */
class PeerLookup {
  private waiting: Array<{ socket: Socket; resolve: (uid: number | undefined) => void }> = [];
  private unreadable = false;

  constructor(private readonly table: string) {}

  uidOf(socket: Socket): Promise<number | undefined> {
    if (this.unreadable || socket.remoteFamily !== 'IPv4') return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting.push({ socket, resolve });
      if (this.waiting.length === 1) setImmediate(() => void this.readBatch());
    });
  }

  private async readBatch(): Promise<void> {
    const batch = this.waiting;
    this.waiting = [];
    let text = '';
    try {
      text = await readFile(this.table, 'latin1');
    } catch {
      this.unreadable = true;
    }
    const owners = socketOwners(text);
    for (const { socket, resolve } of batch) {
      const { remoteAddress, remotePort, localAddress, localPort } = socket;
      // The client's socket: its local end is our remote one, and the other way round.
      const key =
        remoteAddress && remotePort && localAddress && localPort
          ? `${endpointKey(remoteAddress, remotePort)} ${endpointKey(localAddress, localPort)}`
          : '';
      resolve(owners.get(key));
    }
  }
}

/** "local remote" (as /proc/net/tcp spells them) → uid, for every socket the table lists. */
export function socketOwners(text: string): Map<string, number> {
  const owners = new Map<string, number>();
  for (const line of text.split('\n')) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid …
    const fields = line.trim().split(/\s+/);
    const uid = Number(fields[7]);
    if (fields.length > 7 && /^\d+:$/.test(fields[0]!) && Number.isInteger(uid)) owners.set(`${fields[1]} ${fields[2]}`, uid);
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
