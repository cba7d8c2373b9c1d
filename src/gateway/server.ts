/**
 * The gateway's HTTP server on 127.0.0.1: connections, bounds, errors, listening and closing. What
 * each endpoint does is one table (./endpoints.ts); each model API is a small adapter (body → `Turn`,
 * answer → its wire format) over ./turn.ts:
 *
 *   POST /v1/chat/completions        OpenAI Chat Completions (./chat-completions.ts)
 *   POST /v1/responses               OpenAI Responses (./responses.ts)
 *   GET, DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel
 *                                    background responses (./background/)
 *   POST /v1/messages                Anthropic Messages (./anthropic-messages.ts)
 *   POST /v1/messages/count_tokens   an estimate
 *   GET  /v1/models, /v1/models/<id> configured models, plus the Cursor CLI's own when it lists them
 *   GET  /health                     `{"status":"ok"|"degraded", agent_cli, problems, …}` (no key needed)
 *
 * Every request passes, in order: `Host` is a loopback name and our port, a browser `Origin`, if
 * any, is ours, and `Sec-Fetch-Site`, if any, is not cross-site (403: no DNS rebinding, no
 * cross-site calls); then the key (401); a POST must be `application/json` (415). Bounds: headers
 * within 10 s, a body within 30 s (408) and 16 MiB (413), at most `max_connections` connections
 * that sent the key (503 beyond; connections without it have a small pool of their own and no
 * keep-alive: ./connections.ts), at most `max_queued` requests waiting (429 with `Retry-After`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Clock } from '../model/clock.js';
import { DEFAULT_KEEP_ALIVE_MS, type BackchannelClient } from './request-task/index.js';
import type { Logger } from '../client/index.js';
import { sendAnthropicError } from './anthropic-messages.js';
import { sendOpenAIError } from './chat-completions.js';
import type { GatewayConfig } from './config.js';
import { CliModelCache } from './cursor-cli.js';
import { ConnectionBudget } from './connections.js';
import { listModels, serveEndpoint, type EndpointContext } from './endpoints.js';
import { GATEWAY_HOST, hasKey, HttpError } from './http.js';
import { openAIError } from './openai-shapes.js';
import { InvalidRequest } from './request.js';
import { routeFor } from './routes.js';
import { createTurnRunner, type ModelRouting, type TurnRunner } from './turn.js';
import { createBackgroundResponses, type BackgroundResponses } from './background/index.js';
import type { Workspaces } from './workspaces.js';

export { gatewayProblems } from './endpoints.js';

export { GATEWAY_HOST } from './http.js';
/** A client gets this long to send its headers (slowloris). */
export const HEADERS_TIMEOUT_MS = 10_000;

export interface GatewayServerOptions {
  tasks: BackchannelClient;
  /** Where the tasks run, for `/health`: 'gateway' (an own broker), 'app' (an embedding app's) or the hub's control endpoint. */
  runsOn: string;
  config: GatewayConfig;
  /** Set when the broker is shared (an embedding app's, the hub's): caps the gateway's own running tasks. */
  limitConcurrency: boolean;
  logger: Logger;
  /** @default DEFAULT_KEEP_ALIVE_MS */
  keepAliveMs?: number;
  /** What background responses' keep time and request deadlines are measured on (a test's fake clock). @default systemClock */
  clock?: Clock;
  /** The private scratch directories (`config.workspacesDir`). */
  workspaces: Workspaces;
}

export interface GatewayServer {
  readonly port: number;
  /** Stops listening, cancels running requests, waits until their processes are gone. */
  close(): Promise<void>;
}

/** A thrown error as the status and message a client gets. */
function asHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof InvalidRequest) return new HttpError(400, error.message, 'invalid_request', 'invalid_request', error.param);
  return new HttpError(500, `internal error: ${(error as Error).message}`, 'api', 'internal_error');
}

function tooManyConnections(max: number): HttpError {
  return new HttpError(
    503,
    `This gateway already has max_connections (${max}) connections that sent the key; close one or raise max_connections.`,
    'unavailable',
    'too_many_connections',
    null,
    { 'Retry-After': '1' },
  );
}

export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { config, logger } = options;
  const cliModels = new CliModelCache(config.cursorCliPath, config.cliModelsTimeoutMs);
  const models = () => listModels(config, cliModels);
  const routing: ModelRouting = {
    config,
    async resolveModel(model) {
      return routeFor(config, model, []) ?? (config.listCliModels ? routeFor(config, model, await cliModels.get()) : undefined);
    },
    knownModels: async () => (await models()).map((m) => m.id),
  };
  const turns = createTurnRunner({
    ...routing,
    tasks: options.tasks,
    limitConcurrency: options.limitConcurrency,
    workspaces: options.workspaces,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const { clock } = options;
  const background = createBackgroundResponses({ ...routing, tasks: options.tasks, keepAliveMs, ...(clock ? { clock } : {}) });
  const context: EndpointContext = {
    tasks: options.tasks,
    turns,
    config,
    runsOn: options.runsOn,
    keepAliveMs,
    background,
    models,
  };
  let port = 0;
  const connections = new ConnectionBudget(config.maxConnections);
  const server = createServer({ noDelay: true }, (req, res) => {
    req.socket.setNoDelay(true);
    const started = Date.now();
    res.on('finish', () => logger.info(`${req.method} ${req.url} → ${res.statusCode} in ${Date.now() - started} ms`));
    const admitted = connections.admit(req.socket, res, hasKey(config.apiKey, req.headers));
    (admitted ? serveEndpoint(req, res, port, context) : Promise.reject(tooManyConnections(config.maxConnections))).catch(
      (error: unknown) => sendFailure(req, res, error, logger),
    );
  });
  // Streams may legitimately run for minutes: the request deadline is the gateway's own, the body's
  // is readJson's; headers must come quickly.
  server.requestTimeout = 0;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.on('connection', (socket: Socket) => connections.accept(socket));
  port = await listen(server, config.port);
  return { port, close: closeOnce(server, turns, background) };
}

/** A request's failure in its API's shape (Anthropic's for /v1/messages), or as a last SSE event once the stream started. */
function sendFailure(req: IncomingMessage, res: ServerResponse, error: unknown, logger: Logger): void {
  const e = asHttpError(error);
  if (!(error instanceof HttpError) && !(error instanceof InvalidRequest)) logger.error('gateway: unexpected error', error);
  if (e.status === 408 || e.status === 413) res.setHeader('Connection', 'close');
  const anthropic = (req.url ?? '').startsWith('/v1/messages');
  if (!res.headersSent) (anthropic ? sendAnthropicError : sendOpenAIError)(res, e, undefined);
  else if (!res.writableEnded) res.end(`data: ${JSON.stringify(openAIError(e))}\n\n`);
}

/** Listens on 127.0.0.1:`port` (0: a free one); resolves with the port. */
async function listen(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, GATEWAY_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** `close()`: stop listening, cancel the running requests and wait for their processes, then drop the connections; once. */
function closeOnce(server: Server, turns: TurnRunner, background: BackgroundResponses): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      background.close(); // its tasks go on (on a hub, another gateway answers for them)
      await turns.shutdown();
      server.closeAllConnections();
      await stopped;
    })();
    return closing;
  };
}
