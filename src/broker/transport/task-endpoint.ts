/**
 * The transport seam (after vscode-jsonrpc's MessageReader/MessageWriter): what an attempt needs of
 * the endpoint its agent connects to, whatever carries it. `channel.ts` implements it over a
 * `net.Server` listening on a Unix socket (`unix-socket.ts`) or a Windows named pipe (`named-pipe.ts`).
 */
import type { BrokerMessage } from '../../protocol/index.js';

export interface TaskEndpoint {
  /** The address handed to the agent (CURSOR_IPC_PATH). */
  readonly endpoint: string;
  /** Resolves once the endpoint accepts connections (so the agent can be spawned). */
  listen(): Promise<void>;
  /** Sends to every authenticated connection. Returns how many received it. */
  send(message: BrokerMessage): number;
  /**
   * Resolves when no connection is left open, or once none has delivered a byte for `quietMs` (a
   * connection still delivering is waited for, up to DRAIN_CAP_MS in all).
   */
  drained(quietMs: number): Promise<void>;
  /** Stops accepting, ends every connection and removes what the endpoint left on disk. */
  close(): Promise<void>;
}

/** Where an endpoint listens, and the platform's chores around that address. */
export interface EndpointAddress {
  readonly path: string;
  /** After listening: restrict who may connect (file mode), where the platform allows it. */
  secure(): void;
  /** After closing: remove what is left (the socket file), ignoring "already gone". */
  remove(): void;
}
