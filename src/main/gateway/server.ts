/**
 * The gateway's HTTP server: the OpenAI Chat Completions API on 127.0.0.1, each request run as one
 * broker task.
 *
 *   POST /v1/chat/completions   stream (SSE chunks, `[DONE]`) or one `chat.completion`
 *   GET  /v1/models             configured models, plus the Cursor CLI's own when it lists them
 *   GET  /v1/models/<id>
 *   GET  /health                `{"status":"ok", agent_cli: {available, path}, …}` (no key needed)
 *
 * Guarantees:
 * - a stream starts (headers and the role chunk, written at once with Nagle off) on the sub-agent's
 *   first partial, and every text delta is written as soon as its partial arrives;
 * - errors before the stream starts get an HTTP status (400, 401, 403, 404, 500, 503, 504) and
 *   OpenAI's error body; after it started, one final `data: {"error": …}` event, then the end;
 * - a timeout or a client that goes away cancels the task: the broker stops the agent's process
 *   group (cancel message, grace, SIGTERM, SIGKILL);
 * - requests beyond the concurrency limit wait in the queue; none is dropped.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import PQueue from 'p-queue';
import type { TaskBroker, TaskHandle } from '../broker.js';
import type { Logger } from '../log.js';
import { isAllowedHost, isAllowedOrigin } from '../headless/security.js';
import { BrokerError, TaskError } from '../task/errors.js';
import type { TaskSpec } from '../task/types.js';
import { AnswerStream, finalText, usageOf } from './answer.js';
import type { GatewayConfig } from './config.js';
import { CliModelCache, findExecutable } from './cursor-cli.js';
import {
  completion,
  contentChunk,
  errorBody,
  modelEntry,
  roleChunk,
  sseEvent,
  SSE_DONE,
  stopChunk,
  usageChunk,
  type CompletionIdentity,
  type ErrorType,
} from './openai-shapes.js';
import { buildPrompt, InvalidRequest, parseChatRequest } from './request.js';
import { routeFor, taskSpecFor } from './routes.js';

/** Never reachable from the network: requests start processes on this machine. */
export const GATEWAY_HOST = '127.0.0.1';
/** Long chat histories are big, but not this big. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Lines of a failed agent's stderr quoted in the error message. */
const STDERR_LINES_IN_ERRORS = 5;
/**
 * SSE comment sent on a started stream that has been quiet this long: an agent can work silently for
 * minutes (builds, test runs), and proxies and clients drop streams that look dead.
 */
export const DEFAULT_KEEP_ALIVE_MS = 15_000;

export interface GatewayServerOptions {
  broker: TaskBroker;
  config: GatewayConfig;
  /** Set when the broker is shared (the desktop app's): caps the gateway's own running tasks. */
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

type AbortWhy = 'timeout' | 'disconnect' | 'shutdown';

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: ErrorType,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { broker, config, logger } = options;
  const cliModels = new CliModelCache(config.cursorCliPath, config.cliModelsTimeoutMs);
  const limiter = options.limitConcurrency ? new PQueue({ concurrency: config.maxConcurrent }) : undefined;
  const inFlight = new Set<{ abort: AbortController; finished: Promise<unknown> }>();
  let port = 0;
  let closing: Promise<void> | undefined;

  const server = createServer({ noDelay: true }, (req, res) => {
    req.socket.setNoDelay(true);
    const started = Date.now();
    res.on('finish', () => logger.info(`${req.method} ${req.url} → ${res.statusCode} in ${Date.now() - started} ms`));
    handle(req, res).catch((error: unknown) => {
      const e = error instanceof HttpError ? error : new HttpError(500, `internal error: ${(error as Error).message}`, 'api_error', 'internal_error');
      if (!(error instanceof HttpError)) logger.error('gateway: unexpected error', error);
      if (!res.headersSent) sendJson(res, e.status, errorBody(e.message, e.type, e.code, e.param));
      else if (!res.writableEnded) res.end(sseEvent(errorBody(e.message, e.type, e.code, e.param)));
    });
  });
  // Node closes idle keep-alive sockets itself; streams may legitimately run for minutes.
  server.requestTimeout = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isAllowedHost(req.headers.host, port) || !isAllowedOrigin(req.headers.origin, port)) {
      throw new HttpError(403, 'Requests must come from this machine (Host 127.0.0.1 or localhost, no cross-site Origin).', 'invalid_request_error', 'forbidden');
    }
    const url = new URL(req.url ?? '/', `http://${GATEWAY_HOST}`);
    const route = `${req.method} ${url.pathname.replace(/\/+$/, '') || '/'}`;
    if (route === 'GET /health') return health(res);
    checkKey(req);
    if (route === 'POST /v1/chat/completions') return chat(req, res);
    if (route === 'GET /v1/models') return sendJson(res, 200, { object: 'list', data: await models() });
    if (req.method === 'GET' && url.pathname.startsWith('/v1/models/')) {
      const id = decodeURIComponent(url.pathname.slice('/v1/models/'.length));
      const found = (await models()).find((m) => m.id === id);
      if (!found) throw new HttpError(404, `The model \`${id}\` does not exist here. GET /v1/models lists the models.`, 'not_found_error', 'model_not_found', 'model');
      return sendJson(res, 200, found);
    }
    throw new HttpError(404, `Unknown endpoint ${route}. This gateway serves POST /v1/chat/completions, GET /v1/models and GET /health.`, 'not_found_error', 'unknown_url');
  }

  function checkKey(req: IncomingMessage): void {
    if (config.apiKey === undefined) return;
    const header = req.headers.authorization ?? '';
    const given = Buffer.from(header.replace(/^Bearer\s+/i, ''));
    const wanted = Buffer.from(config.apiKey);
    if (!/^Bearer\s+/i.test(header) || given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
      throw new HttpError(401, 'Invalid or missing API key: send `Authorization: Bearer <api_key from the gateway config>`.', 'invalid_request_error', 'invalid_api_key');
    }
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
      requests: inFlight.size,
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

  async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // From the first byte: a client gone before its task starts must not leave the task running.
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort('disconnect' satisfies AbortWhy);
    });
    let request;
    try {
      request = parseChatRequest(await readJson(req));
    } catch (error) {
      if (error instanceof InvalidRequest) throw new HttpError(400, error.message, 'invalid_request_error', 'invalid_request', error.param);
      throw error;
    }
    const model = request.model ?? config.defaultModel;
    const route = routeFor(config, model, []) ?? (config.listCliModels ? routeFor(config, model, await cliModels.get()) : undefined);
    if (!route) {
      const known = (await models()).map((m) => m.id).join(', ');
      throw new HttpError(404, `The model \`${model}\` does not exist here (models: ${known}). Add it under \`models:\` in the gateway config.`, 'not_found_error', 'model_not_found', 'model');
    }

    if (abort.signal.aborted) return; // the client left while the body or the model list was read
    const timer = setTimeout(() => abort.abort('timeout' satisfies AbortWhy), config.requestTimeoutMs);
    const prompt = buildPrompt(request.messages);
    // No `signal` in the spec: cancelling by hand gives the panel a reason a person can read.
    const spec = taskSpecFor(config, { model, route, prompt, messages: request.messages, stream: request.stream });

    let task: TaskHandle | undefined;
    let unsubscribe: (() => void) | undefined;
    const cancelReasons: Record<AbortWhy, string> = {
      timeout: `the gateway request timed out after ${config.requestTimeoutMs} ms`,
      disconnect: 'the client disconnected',
      shutdown: 'the gateway is shutting down',
    };
    abort.signal.addEventListener('abort', () => task?.cancel(cancelReasons[abort.signal.reason as AbortWhy]), { once: true });
    const entry = { abort, finished: Promise.resolve() as Promise<unknown> };
    inFlight.add(entry);

    const who: CompletionIdentity = { id: `chatcmpl-${randomUUID().replace(/-/g, '')}`, created: Math.floor(Date.now() / 1000), model };
    const answer = new AnswerStream();
    let keepAlive: NodeJS.Timeout | undefined;
    const write = (text: string) => {
      if (res.writableEnded || res.destroyed) return;
      res.write(text);
      keepAlive?.refresh();
    };
    const startStream = () => {
      if (res.headersSent) return;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
        'X-Backchannel-Task-Id': task?.id ?? '',
      });
      res.flushHeaders();
      keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS);
      write(sseEvent(roleChunk(who)));
    };

    try {
      task = await submit(spec, abort.signal);
      entry.finished = task.finished;
      if (abort.signal.aborted) task.cancel(cancelReasons[abort.signal.reason as AbortWhy]);
      // Finished tasks stay in the broker's history: the listener (and this response) must not.
      unsubscribe = task.on('update', (update) => {
        if (update.kind !== 'partial') return;
        const delta = answer.push(update.payload?.data);
        if (!request.stream) return;
        startStream();
        if (delta !== '') write(sseEvent(contentChunk(who, delta)));
      });
      const final = await task.result;
      const text = finalText(final.data);
      if (request.stream) {
        startStream();
        const rest = answer.finish(text);
        if (rest !== '') write(sseEvent(contentChunk(who, rest)));
        write(sseEvent(stopChunk(who)));
        if (request.includeUsage) write(sseEvent(usageChunk(who, usageOf(final.data, final.meta, prompt, answer.text))));
        res.end(SSE_DONE);
      } else {
        const content = text !== '' ? text : answer.text;
        res.setHeader('X-Backchannel-Task-Id', task.id);
        sendJson(res, 200, completion(who, content, usageOf(final.data, final.meta, prompt, content)));
      }
    } catch (error) {
      const why = abort.signal.reason as AbortWhy | undefined;
      if (why === 'disconnect') return; // nobody is listening; the task is cancelled
      const failure = describeFailure(error, why, spec);
      const body = errorBody(failure.message, failure.type, failure.code);
      if (res.headersSent) res.end(sseEvent(body));
      else {
        if (task) res.setHeader('X-Backchannel-Task-Id', task.id);
        sendJson(res, failure.status, body);
      }
    } finally {
      clearTimeout(timer);
      clearInterval(keepAlive);
      unsubscribe?.();
      void entry.finished.finally(() => inFlight.delete(entry));
    }
  }

  /** Submits now (own broker: its concurrency queues), or through the gateway's limiter (shared broker). */
  function submit(spec: TaskSpec, signal: AbortSignal): Promise<TaskHandle> {
    if (!limiter) return Promise.resolve(broker.submit(spec));
    return new Promise<TaskHandle>((resolve, reject) => {
      limiter
        .add(
          async () => {
            const task = broker.submit(spec);
            resolve(task);
            await task.finished; // the slot is free once the processes are gone
          },
          { signal },
        )
        .catch(reject);
    });
  }

  function describeFailure(error: unknown, why: AbortWhy | undefined, spec: TaskSpec): HttpError {
    if (why === 'timeout' || (TaskError.is(error) && error.reason === 'timeout')) {
      return new HttpError(504, `The sub-agent did not answer within ${config.requestTimeoutMs} ms; its task was cancelled.`, 'api_error', 'timeout');
    }
    if (why === 'shutdown' || (error instanceof BrokerError && error.code === 'closed')) {
      return new HttpError(503, 'The gateway is shutting down; the request was cancelled.', 'api_error', 'unavailable');
    }
    if (!TaskError.is(error)) return new HttpError(500, `The gateway could not run the sub-agent: ${(error as Error).message}`, 'api_error', 'internal_error');
    const data = error.payload?.data as { message?: unknown } | undefined;
    const own = typeof data?.message === 'string' ? data.message : error.message.replace(`${spec.label ?? ''}: `, '');
    const tail = error.stderrTail && !own.includes(error.stderrTail) ? error.stderrTail.split('\n').slice(-STDERR_LINES_IN_ERRORS).join('\n') : '';
    return new HttpError(500, `The sub-agent failed (${error.reason}): ${own}${tail ? `\nstderr: ${tail}` : ''}`, 'api_error', `agent_${error.reason}`);
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
        for (const entry of inFlight) entry.abort.abort('shutdown' satisfies AbortWhy);
        limiter?.clear();
        await Promise.all([...inFlight].map((entry) => entry.finished.catch(() => {})));
        server.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `The request body is larger than ${MAX_BODY_BYTES} bytes.`, 'invalid_request_error', 'body_too_large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new InvalidRequest('The request body is empty: send a JSON object with `model` and `messages`.');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidRequest(`The request body is not valid JSON (${(error as Error).message}).`);
  }
}
