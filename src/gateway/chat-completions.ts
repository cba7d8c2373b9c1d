/**
 * `POST /v1/chat/completions`: one request, one broker task.
 *
 * Guarantees:
 * - a stream starts (headers and the role chunk, written at once with Nagle off) on the sub-agent's
 *   first partial, and every text delta is written as soon as its partial arrives; a started stream
 *   that goes quiet gets an SSE keep-alive comment;
 * - errors before the stream starts get an HTTP status (400, 404, 500, 503, 504) and OpenAI's error
 *   body; after it started, one final `data: {"error": …}` event, then the end (no `[DONE]`);
 * - a timeout or a client that goes away cancels the task: the broker stops the agent's process
 *   group (cancel message, grace, SIGTERM, SIGKILL);
 * - requests beyond the concurrency limit wait in a queue; none is dropped.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import PQueue from 'p-queue';
import type { TaskBroker, TaskHandle } from '../broker/broker.js';
import { BrokerError, TaskError } from '../broker/errors.js';
import type { TaskSpec } from '../model/task.js';
import { AnswerStream, finalText, usageOf } from './answer.js';
import type { GatewayConfig, ModelRoute } from './config.js';
import { HttpError, readJson, sendJson } from './http.js';
import {
  completion,
  contentChunk,
  roleChunk,
  sseEvent,
  SSE_DONE,
  stopChunk,
  usageChunk,
  type CompletionIdentity,
} from './openai-shapes.js';
import { buildPrompt, InvalidRequest, parseChatRequest } from './request.js';
import { taskSpecFor } from './routes.js';

/**
 * SSE comment sent on a started stream that has been quiet this long: an agent can work silently for
 * minutes (builds, test runs), and proxies and clients drop streams that look dead.
 */
export const DEFAULT_KEEP_ALIVE_MS = 15_000;
/** Lines of a failed agent's stderr quoted in the error message. */
const STDERR_LINES_IN_ERRORS = 5;

type AbortWhy = 'timeout' | 'disconnect' | 'shutdown';

export interface ChatHandlerOptions {
  broker: TaskBroker;
  config: GatewayConfig;
  /** The route for a model name, or undefined (→ 404 listing `knownModels()`). */
  resolveModel(model: string): Promise<ModelRoute | undefined>;
  knownModels(): Promise<string[]>;
  /** Cap the gateway's own running tasks (a shared broker's concurrency is not ours to set). */
  limitConcurrency: boolean;
  keepAliveMs?: number;
}

export interface ChatHandler {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Requests not finished yet (answer sent or not, processes not gone yet). */
  readonly inFlight: number;
  /** Cancels every request (503 / error event) and resolves when their processes are gone. */
  shutdown(): Promise<void>;
}

export function createChatHandler(options: ChatHandlerOptions): ChatHandler {
  const { broker, config } = options;
  const limiter = options.limitConcurrency ? new PQueue({ concurrency: config.maxConcurrent }) : undefined;
  const inFlight = new Set<{ abort: AbortController; finished: Promise<unknown> }>();
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const cancelReasons: Record<AbortWhy, string> = {
    timeout: `the gateway request timed out after ${config.requestTimeoutMs} ms`,
    disconnect: 'the client disconnected',
    shutdown: 'the gateway is shutting down',
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    const route = await options.resolveModel(model);
    if (!route) {
      const known = (await options.knownModels()).join(', ');
      throw new HttpError(
        404,
        `The model \`${model}\` does not exist here (models: ${known}). Add it under \`models:\` in the gateway config.`,
        'not_found_error',
        'model_not_found',
        'model',
      );
    }
    if (abort.signal.aborted) return; // the client left while the body or the model list was read

    const timer = setTimeout(() => abort.abort('timeout' satisfies AbortWhy), config.requestTimeoutMs);
    const prompt = buildPrompt(request.messages);
    // No `signal` in the spec: cancelling by hand gives the panel a reason a person can read.
    const spec = taskSpecFor(config, { model, route, prompt, messages: request.messages, stream: request.stream });
    let task: TaskHandle | undefined;
    let unsubscribe: (() => void) | undefined;
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
      keepAlive = setInterval(() => write(': keep-alive\n\n'), keepAliveMs);
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
      if (res.headersSent) res.end(sseEvent(failure.body));
      else {
        if (task) res.setHeader('X-Backchannel-Task-Id', task.id);
        sendJson(res, failure.status, failure.body);
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
      return new HttpError(
        504,
        `The sub-agent did not answer within ${config.requestTimeoutMs} ms; its task was cancelled.`,
        'api_error',
        'timeout',
      );
    }
    if (why === 'shutdown' || (error instanceof BrokerError && error.code === 'closed')) {
      return new HttpError(503, 'The gateway is shutting down; the request was cancelled.', 'api_error', 'unavailable');
    }
    if (!TaskError.is(error))
      return new HttpError(500, `The gateway could not run the sub-agent: ${(error as Error).message}`, 'api_error', 'internal_error');
    const data = error.payload?.data as { message?: unknown } | undefined;
    const own = typeof data?.message === 'string' ? data.message : error.message.replace(`${spec.label ?? ''}: `, '');
    const tail =
      error.stderrTail && !own.includes(error.stderrTail) ? error.stderrTail.split('\n').slice(-STDERR_LINES_IN_ERRORS).join('\n') : '';
    return new HttpError(
      500,
      `The sub-agent failed (${error.reason}): ${own}${tail ? `\nstderr: ${tail}` : ''}`,
      'api_error',
      `agent_${error.reason}`,
    );
  }

  return {
    handle,
    get inFlight() {
      return inFlight.size;
    },
    async shutdown() {
      for (const entry of inFlight) entry.abort.abort('shutdown' satisfies AbortWhy);
      limiter?.clear();
      await Promise.all([...inFlight].map((entry) => entry.finished.catch(() => {})));
    },
  };
}
