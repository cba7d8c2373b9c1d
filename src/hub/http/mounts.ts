/**
 * An HTTP endpoint another part of the product mounts on the hub's loopback server (MCP over HTTP: src/mcp/http.ts,
 * mounted by `backchannel serve`): the hub imports none of the front-ends, so they hand it this.
 *
 * A request to a mount's path passes the panel's Host and Origin checks (../../loopback/security.ts) first, then
 * goes to the mount, which authenticates it itself (its own token) — never with the panel's token.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface HttpMount {
  /** The exact path served (no query). */
  readonly path: string;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends what the mount holds open (called as the server closes). */
  close?(): Promise<void>;
}

/** The mount serving `pathname`, if any. */
export function mountAt(mounts: readonly HttpMount[], pathname: string): HttpMount | undefined {
  return mounts.find((mount) => mount.path === pathname);
}
