/**
 * Who holds the gateway's connections. Any local user can connect to 127.0.0.1, so `max_connections`
 * belongs to the owner: only connections that have sent the key count against it. The others wait in
 * small pools of their own:
 *
 * - a new connection first waits for the kernel to say which local user holds its other end (on
 *   Linux, ../loopback/peer-user.ts); at most `MAX_LOOKING_UP` wait, and past that the oldest one
 *   that has sent nothing is closed to make room;
 * - then it joins its pool: the owner's processes have one, every other user (and everyone where
 *   users cannot be told apart) share another; when a pool is full, its oldest connection without a
 *   request being answered is closed to make room. So another user's reconnecting flood closes its
 *   own connections, never the owner's new one (X14);
 * - a request without the key is answered once with `Connection: close` (no keep-alive without it);
 * - the first request with the key, whenever it comes, moves its connection into the owner's
 *   `max_connections`; beyond that, the request is refused (503) and its connection closed.
 *
 * So connections that never authenticate — keep-alive `GET /health`, silent sockets — hold at most
 * the pools, and the owner's next connection always gets in. With `auth: none` every request counts
 * as the owner's.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { PeerLookup, PROC_NET_TCP } from '../loopback/peer-user.js';

/**
 * Connections that have not sent the key, per pool, at most: room for a few health probes and
 * clients opening their connection, not for a flood (each costs a descriptor and buffers).
 */
export const UNAUTHENTICATED_CONNECTIONS = 16;

/** Connections waiting for their peer's user at most (a lookup takes a read of the kernel's table). */
export const MAX_LOOKING_UP = 256;

/** Whose a connection is: the owner's processes', or another user's (or unknown). */
export interface PeerUsers {
  /** The owner's uid; undefined where users cannot be told apart. */
  readonly ownUid: number | undefined;
  readonly lookup: Pick<PeerLookup, 'uidOf'>;
}

export const systemPeerUsers = (): PeerUsers => ({ ownUid: process.getuid?.(), lookup: new PeerLookup(PROC_NET_TCP) });

/** A set of connections, oldest first (a Set keeps insertion order), capped. */
class Pool {
  readonly sockets = new Set<Socket>();
  constructor(readonly max: number) {}
}

export class ConnectionBudget {
  /** Waiting for their peer's user. */
  private readonly lookingUp = new Pool(MAX_LOOKING_UP);
  private readonly owners: Pool;
  private readonly others: Pool;
  private readonly keyed = new Set<Socket>();
  /** Connections whose keyless request is being answered: never closed to make room. */
  private readonly answering = new Set<Socket>();

  constructor(
    readonly maxKeyed: number,
    readonly maxPool = UNAUTHENTICATED_CONNECTIONS,
    private readonly peers: PeerUsers = systemPeerUsers(),
  ) {
    this.owners = new Pool(maxPool);
    this.others = new Pool(maxPool);
  }

  /** A new connection: its user is looked up, then it joins that user's pool. */
  accept(socket: Socket): void {
    socket.once('close', () => this.forget(socket));
    this.join(this.lookingUp, socket, (s) => s.bytesRead === 0);
    void this.peers.lookup.uidOf(socket).then((uid) => {
      if (!this.lookingUp.sockets.delete(socket) || socket.destroyed) return; // keyed, or closed, meanwhile
      const owner = uid !== undefined && uid === this.peers.ownUid;
      this.join(owner ? this.owners : this.others, socket);
    });
  }

  /**
   * A request on a connection, with the key or without: false when it must be refused (the key's
   * connections are all taken). Every request without the key, and a refused one, closes its
   * connection after the answer.
   */
  admit(socket: Socket, res: ServerResponse, hasKey: boolean): boolean {
    if (this.keyed.has(socket) && hasKey) return true;
    if (!hasKey || this.keyed.size >= this.maxKeyed) {
      res.setHeader('Connection', 'close');
      if (!this.keyed.has(socket)) {
        this.answering.add(socket);
        res.once('close', () => this.answering.delete(socket));
      }
      return !hasKey;
    }
    this.forget(socket);
    this.keyed.add(socket);
    return true;
  }

  get counts(): { keyed: number; unauthenticated: number } {
    return { keyed: this.keyed.size, unauthenticated: this.lookingUp.sockets.size + this.owners.sockets.size + this.others.sockets.size };
  }

  /**
   * Adds `socket` to `pool`; when that makes it too full, closes its oldest connection without a
   * request being answered, preferring one `first` picks.
   */
  private join(pool: Pool, socket: Socket, first: (s: Socket) => boolean = () => true): void {
    pool.sockets.add(socket);
    if (pool.sockets.size <= pool.max) return;
    let victim: Socket | undefined;
    for (const s of pool.sockets) {
      if (this.answering.has(s)) continue;
      if (first(s)) {
        victim = s;
        break;
      }
      victim ??= s;
    }
    if (!victim) return;
    this.forget(victim);
    victim.destroy();
  }

  private forget(socket: Socket): void {
    this.lookingUp.sockets.delete(socket);
    this.owners.sockets.delete(socket);
    this.others.sockets.delete(socket);
    this.keyed.delete(socket);
    this.answering.delete(socket);
  }
}
