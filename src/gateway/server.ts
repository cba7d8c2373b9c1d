/**
 * The gateway's HTTP server on 127.0.0.1: routing, who may call, bounds, the model list and health.
 * Each model API is a small adapter (body → `Turn`, answer → its wire format) over ./turn.ts:
 *
 *   POST /v1/chat/completions        OpenAI Chat Completions (./chat-completions.ts)
 *   POST /v1/responses               OpenAI Responses (./responses.ts)
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
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { isAllowedHost, isAllowedOrigin } from '../hub/http/security.js';
import { abortOnDisconnect, DEFAULT_KEEP_ALIVE_MS, type TaskCounts, type BackchannelClient } from './request-task/index.js';
import type { Logger } from '../client/index.js';
import { countTokens, messagesTurn, messagesWriter, sendAnthropicError } from './anthropic-messages.js';
import { chatTurn, chatWriter, sendOpenAIError } from './chat-completions.js';
import type { GatewayConfig } from './config.js';
import { CliModelCache, findExecutable } from './cursor-cli.js';
import { ConnectionBudget } from './connections.js';
import { checkKey, hasKey, HttpError, readJson, sendJson } from './http.js';
import { modelEntry, openAIError } from './openai-shapes.js';
import { InvalidRequest, type Turn } from './request.js';
import { responsesTurn, responsesWriter, sendResponsesError } from './responses.js';
import { routeFor } from './routes.js';
import { createTurnRunner, type TurnWriter } from './turn.js';
import type { Workspaces } from './workspaces.js';

/** Never reachable from the network: requests start processes on this machine. */
export const GATEWAY_HOST = '127.0.0.1';
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
  workspaces?: Workspaces;
}

export interface GatewayServer {
  readonly port: number;
  /** Stops listening, cancels running requests, waits until their processes are gone. */
  close(): Promise<void>;
}

/** One model API: its body → a `Turn`, its writer, its error shape. */
interface ModelApi {
  name: string;
  parse(body: unknown, req: IncomingMessage): Turn;
  writer(res: ServerResponse, turn: Turn, model: string, keepAliveMs: number): TurnWriter;
  sendError(res: ServerResponse, error: HttpError, task: undefined): void;
}

/** The model APIs by route: adding an API is one entry and one adapter file. */
const APIS: Record<string, ModelApi> = {
  'POST /v1/chat/completions': {
    name: 'chat',
    parse: (body, req) => chatTurn(body, req.headers),
    writer: (res, turn, model, keepAliveMs) => chatWriter(res, turn as ReturnType<typeof chatTurn>, model, keepAliveMs),
    sendError: sendOpenAIError,
  },
  'POST /v1/responses': {
    name: 'responses',
    parse: (body, req) => responsesTurn(body, req.headers),
    writer: responsesWriter,
    sendError: sendResponsesError,
  },
  'POST /v1/messages': {
    name: 'messages',
    parse: (body, req) => messagesTurn(body, req.headers),
    writer: messagesWriter,
    sendError: sendAnthropicError,
  },
};

/** What keeps configured models from running (a missing CLI), one line each with the fix. */
export function gatewayProblems(
  config: GatewayConfig,
  unavailable: (route: GatewayConfig['models'][string]) => string | undefined,
): string[] {
  const problems = Object.entries(config.models).map(([name, route]) => {
    const why = unavailable(route);
    return why === undefined ? undefined : `model \`${name}\`: ${why}`;
  });
  return [...new Set(problems.filter((p): p is string => p !== undefined))];
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
  const { tasks, config, logger } = options;
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const cliModels = new CliModelCache(config.cursorCliPath, config.cliModelsTimeoutMs);
  const turns = createTurnRunner({
    tasks,
    config,
    limitConcurrency: options.limitConcurrency,
    ...(options.workspaces ? { workspaces: options.workspaces } : {}),
    async resolveModel(model) {
      return routeFor(config, model, []) ?? (config.listCliModels ? routeFor(config, model, await cliModels.get()) : undefined);
    },
    async knownModels() {
      return (await models()).map((m) => m.id);
    },
  });
  let port = 0;
  let closing: Promise<void> | undefined;
  const connections = new ConnectionBudget(config.maxConnections);

  const server = createServer({ noDelay: true }, (req, res) => {
    req.socket.setNoDelay(true);
    const started = Date.now();
    res.on('finish', () => logger.info(`${req.method} ${req.url} → ${res.statusCode} in ${Date.now() - started} ms`));
    const anthropic = (req.url ?? '').startsWith('/v1/messages');
    const admitted = connections.admit(req.socket, res, hasKey(config.apiKey, req.headers));
    (admitted ? handle(req, res) : Promise.reject(tooManyConnections(config.maxConnections))).catch((error: unknown) => {
      const e = asHttpError(error);
      if (!(error instanceof HttpError) && !(error instanceof InvalidRequest)) logger.error('gateway: unexpected error', error);
      if (e.status === 408 || e.status === 413) res.setHeader('Connection', 'close');
      if (!res.headersSent) (anthropic ? sendAnthropicError : sendOpenAIError)(res, e, undefined);
      else if (!res.writableEnded) res.end(`data: ${JSON.stringify(openAIError(e))}\n\n`);
    });
  });
  // Streams may legitimately run for minutes: the request deadline is the gateway's own, the body's
  // is readJson's; headers must come quickly.
  server.requestTimeout = 0;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.on('connection', (socket: Socket) => connections.accept(socket));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fetchSite = req.headers['sec-fetch-site'];
    if (!isAllowedHost(req.headers.host, port) || !isAllowedOrigin(req.headers.origin, port) || fetchSite === 'cross-site') {
      throw new HttpError(
        403,
        'Requests must come from this machine (Host 127.0.0.1 or localhost, no cross-site Origin).',
        'permission',
        'forbidden',
      );
    }
    const url = new URL(req.url ?? '/', `http://${GATEWAY_HOST}`);
    const route = `${req.method} ${url.pathname.replace(/\/+$/, '') || '/'}`;
    if (route === 'GET /health') return health(res);
    checkKey(config.apiKey, req.headers);
    const api = APIS[route];
    if (api || route === 'POST /v1/messages/count_tokens') {
      const type = req.headers['content-type'] ?? '';
      if (!/^application\/json\b/i.test(type))
        throw new HttpError(
          415,
          `Send the body as \`Content-Type: application/json\` (got \`${type || 'none'}\`).`,
          'invalid_request',
          'unsupported_media_type',
        );
    }
    if (api) return answer(api, req, res);
    if (route === 'POST /v1/messages/count_tokens')
      return sendJson(res, 200, countTokens(messagesTurn(await readJson(req, config.bodyTimeoutMs), req.headers)));
    if (route === 'GET /v1/models') return sendJson(res, 200, { object: 'list', data: await models() });
    if (req.method === 'GET' && url.pathname.startsWith('/v1/models/')) {
      const id = decodeURIComponent(url.pathname.slice('/v1/models/'.length));
      const found = (await models()).find((m) => m.id === id);
      if (!found)
        throw new HttpError(
          404,
          `The model \`${id}\` does not exist here. GET /v1/models lists the models.`,
          'not_found',
          'model_not_found',
          'model',
        );
      return sendJson(res, 200, found);
    }
    throw new HttpError(
      404,
      `Unknown endpoint ${route}. This gateway serves POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, GET /v1/models and GET /health.`,
      'not_found',
      'unknown_url',
    );
  }

  async function answer(api: ModelApi, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const abort = abortOnDisconnect(res);
    const turn = api.parse(await readJson(req, config.bodyTimeoutMs), req);
    const writer = api.writer(res, turn, turn.model ?? config.defaultModel, keepAliveMs);
    await turns.run(turn, abort, writer, api.name);
  }

  /**
   * `degraded` (still 200: the gateway itself is up) when a configured model's CLI is missing, with
   * the hint, or the hub its tasks run on cannot be reached.
   */
  async function health(res: ServerResponse): Promise<void> {
    const path = findExecutable(config.cursorCliPath);
    const problems = gatewayProblems(config, turns.unavailable);
    let stats: TaskCounts = { running: 0, queued: 0 };
    try {
      stats = await tasks.counts();
    } catch (error) {
      problems.push(`tasks: ${(error as Error).message}`);
    }
    sendJson(res, 200, {
      status: problems.length === 0 ? 'ok' : 'degraded',
      problems,
      agent_cli: { available: path !== undefined, path: path ?? config.cursorCliPath },
      models: Object.keys(config.models),
      default_model: config.defaultModel,
      max_concurrent: config.maxConcurrent,
      requests: turns.inFlight,
      sessions: turns.sessions,
      tasks: { running: stats.running, queued: stats.queued },
      runs_on: options.runsOn,
    });
  }

  async function models() {
    const created = Math.floor(Date.now() / 1000);
    const list = Object.keys(config.models).map((id) => modelEntry(id, 'backchannel', created));
    if (config.listCliModels) {
      for (const id of await cliModels.get()) if (!list.some((m) => m.id === id)) list.push(modelEntry(id, 'cursor', created));
    }
    return list;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, GATEWAY_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  return {
    port,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await turns.shutdown();
        server.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}
