/**
 * One stdio connection, served in the era its first message opens:
 * - `initialize` (a 2025-era client — Claude Code sends it to stdio servers): the 2025-11-25 server on SDK v1
 *   (./server.ts), which keeps the 2025-11-25 MCP Tasks, elicitation and progress that the SDK v2 does not serve;
 * - anything else (a 2026-07-28 client: `server/discover` or a request with the `_meta` envelope): the SDK v2's own
 *   stdio entry (`serveStdio`) over the factory of ./modern-server.ts, which owns everything of that era.
 *
 * The messages are read once, by the transport given (the size guard of ./stdio-guard.ts); the chosen server gets
 * a hand-off transport that starts with the first message and then passes every message through both ways — except,
 * in the modern era, a `subscriptions/listen` for tasks and its cancellation, which ./task-listen.ts serves (the
 * SDK's listen router drops `taskIds`).
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { McpServer as ModernServer, Transport as ModernTransport } from '@modelcontextprotocol/server';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ListenSink, TaskListens } from './task-listen.js';

export type Era = 'legacy' | 'modern';

export interface EraServers {
  /** Serves a 2025-era connection over `transport` (connects the v1 server to it). */
  legacy(transport: Transport): Promise<void>;
  /** Makes a 2026-07-28 server instance (the SDK v2 entry calls it per connection, and for a discover probe). */
  modern(): ModernServer;
  /** The connection's task subscriptions (modern era only). */
  listens?: TaskListens;
}

/** The era a connection's first message opens. */
export function eraOf(message: JSONRPCMessage): Era {
  return 'method' in message && message.method === 'initialize' ? 'legacy' : 'modern';
}

/**
 * Serves `transport` (not started yet) in the era its first message opens. Resolves with the era once chosen; the
 * returned `close` ends the chosen server (the modern entry's handle; the legacy server closes with its transport).
 */
export async function serveByEra(transport: Transport, servers: EraServers): Promise<{ era: Promise<Era>; close(): Promise<void> }> {
  const handoff = new Handoff(transport);
  let chosen: ((era: Era) => void) | undefined;
  const era = new Promise<Era>((resolve) => (chosen = resolve));
  let modernHandle: { close(): Promise<void> } | undefined;
  let decided: Era | undefined;
  const sink: ListenSink = { send: (message) => void transport.send(message as JSONRPCMessage).catch(() => {}), end: () => {} };
  transport.onmessage = (message) => {
    if (!decided) {
      decided = eraOf(message);
      chosen?.(decided);
      if (decided === 'legacy') void servers.legacy(handoff).catch((error: unknown) => handoff.onerror?.(error as Error));
      else modernHandle = serveStdio(servers.modern, { transport: handoff as unknown as ModernTransport });
    }
    if (decided === 'modern' && servers.listens?.take(message, () => sink)) return;
    handoff.deliver(message);
  };
  transport.onclose = () => {
    servers.listens?.closeAll(false);
    handoff.onclose?.();
  };
  transport.onerror = (error) => handoff.onerror?.(error);
  await transport.start();
  return {
    era,
    async close() {
      servers.listens?.closeAll(false);
      if (modernHandle) await modernHandle.close().catch(() => {});
      await transport.close().catch(() => {});
    },
  };
}

/** The transport a chosen server gets: already started underneath; holds messages until the server listens. */
class Handoff implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  #started = false;
  readonly #waiting: JSONRPCMessage[] = [];

  constructor(private readonly under: Transport) {}

  async start(): Promise<void> {
    this.#started = true;
    // The server sets `onmessage` before it starts its transport; give it the messages that came meanwhile.
    queueMicrotask(() => this.#flush());
  }

  deliver(message: JSONRPCMessage): void {
    this.#waiting.push(message);
    if (this.#started) this.#flush();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.under.send(message);
  }

  close(): Promise<void> {
    return this.under.close();
  }

  #flush(): void {
    while (this.onmessage && this.#waiting.length > 0) this.onmessage(this.#waiting.shift()!);
  }
}
