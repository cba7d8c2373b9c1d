/**
 * The gateway's endpoints as one table (`ENDPOINT` key → what serves it): the three model APIs, the
 * token estimate, the model list and health. `serve` checks every request in order before its
 * endpoint runs: the caller is on this machine (403), the key (401, not for `/health`), a JSON body
 * for a POST (415); an unknown endpoint is a 404 that lists them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAllowedHost, isAllowedOrigin } from '../loopback/security.js';
import { abortOnDisconnect, type BackchannelClient, type TaskLoad } from './request-task/index.js';
import { backgroundRoute, isBackgroundRequest, type BackgroundResponses } from './background/index.js';
import { countTokens, messagesTurn, messagesWriter, sendAnthropicError } from './anthropic-messages.js';
import { chatTurn, chatWriter, sendOpenAIError } from './chat-completions.js';
import type { GatewayConfig } from './config.js';
import { findExecutable, type CliModelCache } from './cursor-cli.js';
import { checkKey, GATEWAY_HOST, HttpError, readJson, sendJson } from './http.js';
import { modelEntry } from './openai-shapes.js';
import type { Turn } from './request.js';
import { responsesTurn, responsesWriter, sendResponsesError } from './responses.js';
import type { TurnApi, TurnRunner, TurnWriter } from './turn.js';

/** What the endpoints answer from. */
export interface EndpointContext {
  tasks: BackchannelClient;
  turns: TurnRunner;
  config: GatewayConfig;
  /** Where the tasks run, for `/health`: 'gateway' (an own broker), 'app' (an embedding app's) or the hub's control endpoint. */
  runsOn: string;
  keepAliveMs: number;
  /** The configured models, then the Cursor CLI's own when `list_cli_models` is on. */
  models(): Promise<ModelEntry[]>;
  /** Responses background mode (./background/). */
  background: BackgroundResponses;
}

export type ModelEntry = ReturnType<typeof modelEntry>;

/** One request as an endpoint gets it. */
interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
}

interface Endpoint {
  /** Served without the key (`/health`). */
  open?: boolean;
  /** A POST whose body must be `application/json` (415 otherwise). */
  json?: boolean;
  serve(call: Call, context: EndpointContext): Promise<void>;
}

/** One model API: its name, its tool-call id prefix, its body → a `Turn` (tool readers included), its writer, its error shape. */
interface ModelApi extends TurnApi {
  parse(body: unknown, req: IncomingMessage): Turn;
  writer(res: ServerResponse, turn: Turn, model: string, keepAliveMs: number): TurnWriter;
  sendError(res: ServerResponse, error: HttpError, task: undefined): void;
}

/** The model APIs by route: adding an API is one entry and one adapter file. */
const APIS: Record<string, ModelApi> = {
  'POST /v1/chat/completions': {
    name: 'chat',
    callIdPrefix: 'call_',
    parse: (body, req) => chatTurn(body, req.headers),
    writer: (res, turn, model, keepAliveMs) => chatWriter(res, turn as ReturnType<typeof chatTurn>, model, keepAliveMs),
    sendError: sendOpenAIError,
  },
  'POST /v1/responses': {
    name: 'responses',
    callIdPrefix: 'call_',
    parse: (body, req) => responsesTurn(body, req.headers),
    writer: responsesWriter,
    sendError: sendResponsesError,
  },
  'POST /v1/messages': {
    name: 'messages',
    callIdPrefix: 'toolu_',
    parse: (body, req) => messagesTurn(body, req.headers),
    writer: messagesWriter,
    sendError: sendAnthropicError,
  },
};

/** The key of `GET /v1/models/<id>` (one model) in the table. */
const ONE_MODEL = 'GET /v1/models/:id';
const ONE_MODEL_PREFIX = '/v1/models/';

/** Every endpoint by `METHOD /path`: adding one is one entry. */
const ENDPOINTS = new Map<string, Endpoint>([
  ['GET /health', { open: true, serve: ({ res }, context) => health(res, context) }],
  ...Object.entries(APIS).map(([route, api]): [string, Endpoint] => [
    route,
    { json: true, serve: ({ req, res }, context) => answer(api, req, res, context) },
  ]),
  [
    'POST /v1/messages/count_tokens',
    {
      json: true,
      serve: async ({ req, res }, { config }) =>
        sendJson(res, 200, countTokens(messagesTurn(await readJson(req, config.bodyTimeoutMs), req.headers))),
    },
  ],
  ['GET /v1/models', { serve: async ({ res }, context) => sendJson(res, 200, { object: 'list', data: await context.models() }) }],
  [
    ONE_MODEL,
    { serve: ({ res, url }, context) => oneModel(res, decodeURIComponent(url.pathname.slice(ONE_MODEL_PREFIX.length)), context) },
  ],
]);

/** Checks the request (see the file header) and serves it. `port` is the gateway's, for the `Host` check. */
export async function serveEndpoint(req: IncomingMessage, res: ServerResponse, port: number, context: EndpointContext): Promise<void> {
  checkLoopback(req, port);
  const url = new URL(req.url ?? '/', `http://${GATEWAY_HOST}`);
  const route = `${req.method} ${url.pathname.replace(/\/+$/, '') || '/'}`;
  const endpoint =
    ENDPOINTS.get(route) ??
    (req.method === 'GET' && url.pathname.startsWith(ONE_MODEL_PREFIX) ? ENDPOINTS.get(ONE_MODEL) : undefined) ??
    oneResponse(req.method, url.pathname);
  if (!endpoint?.open) checkKey(context.config.apiKey, req.headers);
  if (!endpoint)
    throw new HttpError(
      404,
      `Unknown endpoint ${route}. This gateway serves POST /v1/chat/completions, POST /v1/responses (GET, DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel), POST /v1/messages, GET /v1/models and GET /health.`,
      'not_found',
      'unknown_url',
    );
  if (endpoint.json) checkJsonBody(req);
  return endpoint.serve({ req, res, url }, context);
}

/** `Host` is a loopback name and our port, a browser `Origin`, if any, is ours, `Sec-Fetch-Site`, if any, not cross-site. */
function checkLoopback(req: IncomingMessage, port: number): void {
  const fetchSite = req.headers['sec-fetch-site'];
  if (!isAllowedHost(req.headers.host, port) || !isAllowedOrigin(req.headers.origin, port) || fetchSite === 'cross-site') {
    throw new HttpError(
      403,
      'Requests must come from this machine (Host 127.0.0.1 or localhost, no cross-site Origin).',
      'permission',
      'forbidden',
    );
  }
}

function checkJsonBody(req: IncomingMessage): void {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type))
    throw new HttpError(
      415,
      `Send the body as \`Content-Type: application/json\` (got \`${type || 'none'}\`).`,
      'invalid_request',
      'unsupported_media_type',
    );
}

async function answer(api: ModelApi, req: IncomingMessage, res: ServerResponse, context: EndpointContext): Promise<void> {
  const { config, turns, keepAliveMs } = context;
  const abort = abortOnDisconnect(res);
  const body = await readJson(req, config.bodyTimeoutMs);
  const turn = api.parse(body, req);
  if (api.name === 'responses' && isBackgroundRequest(body)) return context.background.create(body, turn, res);
  const writer = api.writer(res, turn, turn.model ?? config.defaultModel, keepAliveMs);
  await turns.run(turn, abort, writer, { name: api.name, callIdPrefix: api.callIdPrefix });
}

/** A background response's own routes (./background/), as endpoints of the table's shape. */
function oneResponse(method: string | undefined, pathname: string): Endpoint | undefined {
  const found = backgroundRoute(method, pathname);
  if (!found) return undefined;
  return {
    serve: ({ res, url }, { background }) =>
      found.action === 'retrieve'
        ? background.retrieve(found.id, url.searchParams, res)
        : found.action === 'cancel'
          ? background.cancel(found.id, res)
          : background.delete(found.id, res),
  };
}

async function oneModel(res: ServerResponse, id: string, context: EndpointContext): Promise<void> {
  const found = (await context.models()).find((m) => m.id === id);
  if (!found)
    throw new HttpError(
      404,
      `The model \`${id}\` does not exist here. GET /v1/models lists the models.`,
      'not_found',
      'model_not_found',
      'model',
    );
  sendJson(res, 200, found);
}

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

/**
 * `degraded` (still 200: the gateway itself is up) when a configured model's CLI is missing, with
 * the hint, or the hub its tasks run on cannot be reached.
 */
async function health(res: ServerResponse, { tasks, turns, config, runsOn }: EndpointContext): Promise<void> {
  const path = findExecutable(config.cursorCliPath);
  const problems = gatewayProblems(config, turns.unavailable);
  let stats: TaskLoad = { running: 0, queued: 0 };
  let connections: Awaited<ReturnType<BackchannelClient['info']>>['connections'];
  try {
    stats = await tasks.counts();
    // What the broker's task endpoints refused or failed to accept: a lost result's first suspect.
    connections = (await tasks.info()).connections;
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
    bridge: turns.bridgeStats(),
    tasks: { running: stats.running, queued: stats.queued },
    ...(connections
      ? {
          connections: {
            refused: connections.refused,
            accept_errors: connections.acceptErrors,
            last_accept_error: connections.lastAcceptError ?? null,
          },
        }
      : {}),
    runs_on: runsOn,
  });
}

/** The configured models, then the Cursor CLI's own (when `list_cli_models` is on) that are not configured. */
export async function listModels(config: GatewayConfig, cliModels: CliModelCache): Promise<ModelEntry[]> {
  const created = Math.floor(Date.now() / 1000);
  const list = Object.keys(config.models).map((id) => modelEntry(id, 'backchannel', created));
  if (config.listCliModels) {
    for (const id of await cliModels.get()) if (!list.some((m) => m.id === id)) list.push(modelEntry(id, 'cursor', created));
  }
  return list;
}
