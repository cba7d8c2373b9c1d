/**
 * 2025-era clients of MCP over HTTP (`initialize`, then requests with an `Mcp-Session-Id`): each session is the
 * 2025-11-25 server on SDK v1 (./server.ts) over the SDK v1's Streamable HTTP transport in stateful mode, exactly the
 * server a 2025-era stdio client gets (./stdio-eras.ts routes by the first message, ./http.ts by the SDK v2's
 * `isLegacyRequest`) — so a legacy client gets the 2025-11-25 MCP Tasks (task-augmented `tools/call`, `tasks/get`,
 * `tasks/result`, `tasks/list`, `tasks/cancel`), progress and elicitation over HTTP too, which the SDK v2's stateless
 * legacy fallback does not serve.
 *
 * - A session ends on the client's DELETE, when the endpoint closes, or — past MAX_LEGACY_SESSIONS — as the least
 *   recently used one, so clients that vanish without a DELETE cannot hold the hub's memory.
 * - A request naming an unknown session is a 404 with a JSON-RPC error, as the transport specification asks (the
 *   client then starts a new session). A 2025-era request that is neither an `initialize` nor a session's (a
 *   readiness probe, a GET for a standalone stream) stays with the SDK v2's stateless fallback (./http.ts).
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { BackchannelClient } from '../client/index.js';
import { serveLegacy, type BackchannelMcp } from './server.js';

/** Sessions kept at most (each holds a server and its tasks' handles); past it the least recently used one ends. */
export const MAX_LEGACY_SESSIONS = 64;
const SESSION_HEADER = 'mcp-session-id';

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  mcp: BackchannelMcp;
}

export class LegacyHttpSessions {
  /** By session id, least recently used first. */
  readonly #sessions = new Map<string, Session>();

  constructor(
    private readonly client: BackchannelClient,
    private readonly version: string,
  ) {}

  get size(): number {
    return this.#sessions.size;
  }

  /**
   * True for the 2025-era requests sessions serve: an `initialize`, and every request naming a session. Others (a
   * probe, a client that never initializes) stay with the SDK v2's stateless fallback, as before sessions existed.
   */
  serves(request: Request, parsedBody: unknown): boolean {
    if (request.headers.get(SESSION_HEADER) !== null) return true;
    const messages = Array.isArray(parsedBody) ? (parsedBody as unknown[]) : [parsedBody];
    return request.method === 'POST' && messages.some((message) => (message as { method?: unknown } | null)?.method === 'initialize');
  }

  /** Serves one request `serves` took (its body parsed already, when it has one). */
  async handle(request: Request, parsedBody: unknown): Promise<Response> {
    const id = request.headers.get(SESSION_HEADER);
    if (id !== null) {
      const session = this.#sessions.get(id);
      if (!session) return sessionNotFound();
      this.#sessions.delete(id);
      this.#sessions.set(id, session);
      return session.transport.handleRequest(request, { parsedBody });
    }
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId): void => this.#opened(sessionId, { transport, mcp }),
      onsessionclosed: (sessionId) => void this.#end(sessionId),
    });
    const mcp = await serveLegacy(this.client, this.version, transport);
    const response = await transport.handleRequest(request, { parsedBody });
    // Not an initialize (the transport refused it): nothing opened, nothing kept.
    if (transport.sessionId === undefined) await this.#dispose({ transport, mcp });
    return response;
  }

  /** Ends every session (the endpoint is closing). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.#sessions.keys()].map((id) => this.#end(id)));
  }

  #opened(sessionId: string, session: Session): void {
    this.#sessions.set(sessionId, session);
    while (this.#sessions.size > MAX_LEGACY_SESSIONS) {
      const [oldest] = this.#sessions.keys();
      void this.#end(oldest!);
    }
  }

  async #end(sessionId: string): Promise<void> {
    const session = this.#sessions.get(sessionId);
    if (!session) return;
    this.#sessions.delete(sessionId);
    await this.#dispose(session);
  }

  async #dispose({ transport, mcp }: Session): Promise<void> {
    mcp.dispose();
    await mcp.server.close().catch(() => {});
    await transport.close().catch(() => {});
  }
}

function sessionNotFound(): Response {
  const body = { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found: initialize a new session' } };
  return Response.json(body, { status: 404 });
}
