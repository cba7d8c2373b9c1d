/**
 * Who holds the gateway's connections. Any local user can connect to 127.0.0.1, so `max_connections`
 * belongs to the owner: only connections that have sent the key count against it. The others share
 * a small pool of their own:
 *
 * - a new connection starts in the pool (it has sent nothing yet); when the pool is full, its oldest
 *   connection without a request being answered is closed to make room;
 * - a request without the key is answered once with `Connection: close` (no keep-alive without it);
 * - the first request with the key moves its connection out of the pool into the owner's
 *   `max_connections`; beyond that, the request is refused (503) and its connection closed.
 *
 * So connections that never authenticate — keep-alive `GET /health`, silent sockets — hold at most
 * the pool, and the owner's next connection always gets in. With `auth: none` every request counts
 * as the owner's.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Connections that have not sent the key, at most: room for a few health probes and clients opening
 * their connection, not for a flood (each costs a descriptor and buffers).
 */
export const UNAUTHENTICATED_CONNECTIONS = 16;

export class ConnectionBudget {
  /** Not yet authenticated, oldest first (a Set keeps insertion order). */
  private readonly pool = new Set<Socket>();
  private readonly keyed = new Set<Socket>();
  /** Pool connections whose request is being answered: never closed to make room. */
  private readonly answering = new Set<Socket>();

  constructor(
    readonly maxKeyed: number,
    readonly maxPool = UNAUTHENTICATED_CONNECTIONS,
  ) {}

  /** A new connection: into the pool, closing the pool's oldest idle one when full. */
  accept(socket: Socket): void {
    this.pool.add(socket);
    socket.once('close', () => this.forget(socket));
    if (this.pool.size <= this.maxPool) return;
    for (const old of this.pool) {
      if (this.answering.has(old)) continue;
      this.forget(old);
      old.destroy();
      return;
    }
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
      if (this.pool.has(socket)) {
        this.answering.add(socket);
        res.once('close', () => this.answering.delete(socket));
      }
      return !hasKey;
    }
    this.pool.delete(socket);
    this.keyed.add(socket);
    return true;
  }

  get counts(): { keyed: number; unauthenticated: number } {
    return { keyed: this.keyed.size, unauthenticated: this.pool.size };
  }

  private forget(socket: Socket): void {
    this.pool.delete(socket);
    this.keyed.delete(socket);
    this.answering.delete(socket);
  }
}
