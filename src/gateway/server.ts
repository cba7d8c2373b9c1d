/**
 * The gateway's HTTP server on 127.0.0.1: routing, who may call, the model list and health. The
 * completions themselves are in ./chat-completions.ts.
 *
 *   POST /v1/chat/completions   stream (SSE chunks, `[DONE]`) or one `chat.completion`
 *   GET  /v1/models             configured models, plus the Cursor CLI's own when it lists them
 *   GET  /v1/models/<id>
 *   GET  /health                `{"status":"ok", agent_cli: {available, path}, …}` (no key needed)
 *
 * Every request passes, in order: `Host` is a loopback name and our port, and a browser `Origin`, if
 * any, is ours (403: no DNS rebinding, no cross-site calls); then the bearer key when one is
 * configured (401).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TaskBroker } from '../broker/broker.js';
import { isAllowedHost, isAllowedOrigin } from '../hosts/http/security.js';
import type { Logger } from '../broker/log.js';
import { createChatHandler } from './chat-completions.js';
import type { GatewayConfig } from './config.js';
import { CliModelCache, findExecutable } from './cursor-cli.js';
import { checkBearer, HttpError, sendJson } from './http.js';
import { modelEntry, sseEvent } from './openai-shapes.js';
import { routeFor } from './routes.js';

/** Never reachable from the network: requests start processes on this machine. */
export const GATEWAY_HOST = '127.0.0.1';

export interface GatewayServerOptions {
  broker: TaskBroker;
  config: GatewayConfig;
  /** Set when the broker is shared (an embedding app's): caps the gateway's own running tasks. */
  limitConcurrency: boolean;
  logger: Logger;
  /** @default DEFAULT_KEEP_ALIVE_MS */
  keepAliveMs?: number;
}

export interface GatewayServer {
  readonly port: number;
  /** Stops listening, cancels running requests, waits until their processes are gone. */
  close(): Promise<void>;
}

export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { broker, config, logger } = options;
  const cliModels = new CliModelCache(config.cursorCliPath, config.cliModelsTimeoutMs);
  const chat = createChatHandler({
    broker,
    config,
    limitConcurrency: options.limitConcurrency,
    ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
    async resolveModel(model) {
      return routeFor(config, model, []) ?? (config.listCliModels ? routeFor(config, model, await cliModels.get()) : undefined);
    },
    async knownModels() {
      return (await models()).map((m) => m.id);
    },
  });
  let port = 0;
  let closing: Promise<void> | undefined;

  const server = createServer({ noDelay: true }, (req, res) => {
    req.socket.setNoDelay(true);
    const started = Date.now();
    res.on('finish', () => logger.info(`${req.method} ${req.url} → ${res.statusCode} in ${Date.now() - started} ms`));
    handle(req, res).catch((error: unknown) => {
      const e =
        error instanceof HttpError
          ? error
          : new HttpError(500, `internal error: ${(error as Error).message}`, 'api_error', 'internal_error');
      if (!(error instanceof HttpError)) logger.error('gateway: unexpected error', error);
      if (!res.headersSent) sendJson(res, e.status, e.body);
      else if (!res.writableEnded) res.end(sseEvent(e.body));
    });
  });
  // Streams may legitimately run for minutes; the request timeout is the gateway's own.
  server.requestTimeout = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isAllowedHost(req.headers.host, port) || !isAllowedOrigin(req.headers.origin, port)) {
      throw new HttpError(
        403,
        'Requests must come from this machine (Host 127.0.0.1 or localhost, no cross-site Origin).',
        'invalid_request_error',
        'forbidden',
      );
    }
    const url = new URL(req.url ?? '/', `http://${GATEWAY_HOST}`);
    const route = `${req.method} ${url.pathname.replace(/\/+$/, '') || '/'}`;
    if (route === 'GET /health') return health(res);
    checkBearer(config.apiKey, req.headers.authorization);
    if (route === 'POST /v1/chat/completions') return chat.handle(req, res);
    if (route === 'GET /v1/models') return sendJson(res, 200, { object: 'list', data: await models() });
    if (req.method === 'GET' && url.pathname.startsWith('/v1/models/')) {
      const id = decodeURIComponent(url.pathname.slice('/v1/models/'.length));
      const found = (await models()).find((m) => m.id === id);
      if (!found)
        throw new HttpError(
          404,
          `The model \`${id}\` does not exist here. GET /v1/models lists the models.`,
          'not_found_error',
          'model_not_found',
          'model',
        );
      return sendJson(res, 200, found);
    }
    throw new HttpError(
      404,
      `Unknown endpoint ${route}. This gateway serves POST /v1/chat/completions, GET /v1/models and GET /health.`,
      'not_found_error',
      'unknown_url',
    );
  }

  function health(res: ServerResponse): void {
    const path = findExecutable(config.cursorCliPath);
    const stats = broker.stats();
    sendJson(res, 200, {
      status: 'ok',
      agent_cli: { available: path !== undefined, path: path ?? config.cursorCliPath },
      models: Object.keys(config.models),
      default_model: config.defaultModel,
      max_concurrent: config.maxConcurrent,
      requests: chat.inFlight,
      tasks: { running: stats.running, queued: stats.queued },
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
        await chat.shutdown();
        server.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}
