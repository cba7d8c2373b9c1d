/**
 * `POST /v1/chat/completions`: one request, one broker task (run by the shared request-task helper
 * in src/hosts/request-task).
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
import type { TaskBroker, TaskHandle } from '../broker/broker.js';
import {
  abortOnDisconnect,
  createRequestTaskRunner,
  DEFAULT_KEEP_ALIVE_MS,
  describeFailure,
  SseResponder,
  type TaskFailure,
  type TaskResult,
} from '../hosts/request-task/index.js';
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
import { buildPrompt, InvalidRequest, parseChatRequest, type ChatRequest } from './request.js';
import { taskSpecFor } from './routes.js';

const TASK_ID_HEADER = 'X-Backchannel-Task-Id';

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
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const runner = createRequestTaskRunner({
    broker,
    timeoutMs: config.requestTimeoutMs,
    name: 'gateway',
    ...(options.limitConcurrency ? { maxConcurrent: config.maxConcurrent } : {}),
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const abort = abortOnDisconnect(res);
    const request = await readChatRequest(req);
    const model = request.model ?? config.defaultModel;
    const route = await findRoute(model);
    if (abort.signal.aborted) return; // the client left while the body or the model list was read

    const prompt = buildPrompt(request.messages);
    const spec = taskSpecFor(config, { model, route, prompt, messages: request.messages, stream: request.stream });
    const who: CompletionIdentity = { id: `chatcmpl-${randomUUID().replace(/-/g, '')}`, created: Math.floor(Date.now() / 1000), model };
    const reply = request.stream ? new StreamReply(res, who, keepAliveMs, request.includeUsage) : new JsonReply(res, who);
    const answer = new AnswerStream();
    const run = runner.start({
      spec,
      abort,
      onUpdate(update, task) {
        if (update.kind === 'partial') reply.partial(answer.push(update.payload?.data), task);
      },
    });
    try {
      reply.succeed(await run.result, answer, prompt, run.task!);
    } catch (error) {
      if (run.why === 'disconnect') return; // nobody is listening; the task is cancelled
      const failure = describeFailure(error, { why: run.why, timeoutMs: config.requestTimeoutMs, label: spec.label, name: 'gateway' });
      reply.fail(httpErrorFor(failure), run.task);
    } finally {
      reply.close();
    }
  }

  async function findRoute(model: string): Promise<ModelRoute> {
    const route = await options.resolveModel(model);
    if (route) return route;
    const known = (await options.knownModels()).join(', ');
    throw new HttpError(
      404,
      `The model \`${model}\` does not exist here (models: ${known}). Add it under \`models:\` in the gateway config.`,
      'not_found_error',
      'model_not_found',
      'model',
    );
  }

  return {
    handle,
    get inFlight() {
      return runner.inFlight;
    },
    shutdown: () => runner.shutdown(),
  };
}

/** The request body checked; a bad one is a 400 with OpenAI's `param`. */
async function readChatRequest(req: IncomingMessage): Promise<ChatRequest> {
  try {
    return parseChatRequest(await readJson(req));
  } catch (error) {
    if (error instanceof InvalidRequest) throw new HttpError(400, error.message, 'invalid_request_error', 'invalid_request', error.param);
    throw error;
  }
}

/** A task failure as the status and error body OpenAI clients expect. */
function httpErrorFor(failure: TaskFailure): HttpError {
  switch (failure.kind) {
    case 'timeout':
      return new HttpError(504, failure.message, 'api_error', 'timeout');
    case 'unavailable':
      return new HttpError(503, failure.message, 'api_error', 'unavailable');
    case 'internal':
      return new HttpError(500, failure.message, 'api_error', 'internal_error');
    case 'agent':
      return new HttpError(500, failure.message, 'api_error', `agent_${failure.reason}`);
  }
}

/** How one request is answered: as a stream of chunks, or as one `chat.completion`. */
interface Reply {
  /** New answer text from a partial ('' when it carried none). */
  partial(delta: string, task: TaskHandle): void;
  succeed(final: TaskResult, answer: AnswerStream, prompt: string, task: TaskHandle): void;
  fail(error: HttpError, task: TaskHandle | undefined): void;
  close(): void;
}

/** Errors before anything was sent: the status, the body, and the task id when there was a task. */
function sendError(res: ServerResponse, error: HttpError, task: TaskHandle | undefined): void {
  if (task) res.setHeader(TASK_ID_HEADER, task.id);
  sendJson(res, error.status, error.body);
}

class StreamReply implements Reply {
  private readonly sse: SseResponder;

  constructor(
    private readonly res: ServerResponse,
    private readonly who: CompletionIdentity,
    keepAliveMs: number,
    private readonly includeUsage: boolean,
  ) {
    this.sse = new SseResponder(res, keepAliveMs);
  }

  partial(delta: string, task: TaskHandle): void {
    this.start(task);
    if (delta !== '') this.sse.write(sseEvent(contentChunk(this.who, delta)));
  }

  succeed(final: TaskResult, answer: AnswerStream, prompt: string, task: TaskHandle): void {
    this.start(task);
    const rest = answer.finish(finalText(final.data));
    if (rest !== '') this.sse.write(sseEvent(contentChunk(this.who, rest)));
    this.sse.write(sseEvent(stopChunk(this.who)));
    if (this.includeUsage) this.sse.write(sseEvent(usageChunk(this.who, usageOf(final.data, final.meta, prompt, answer.text))));
    this.sse.end(SSE_DONE);
  }

  fail(error: HttpError, task: TaskHandle | undefined): void {
    if (this.sse.started) this.sse.end(sseEvent(error.body));
    else sendError(this.res, error, task);
  }

  close(): void {
    this.sse.close();
  }

  private start(task: TaskHandle): void {
    this.sse.start({ [TASK_ID_HEADER]: task.id }, sseEvent(roleChunk(this.who)));
  }
}

class JsonReply implements Reply {
  constructor(
    private readonly res: ServerResponse,
    private readonly who: CompletionIdentity,
  ) {}

  partial(): void {
    // The answer is sent whole at the end.
  }

  succeed(final: TaskResult, answer: AnswerStream, prompt: string, task: TaskHandle): void {
    const text = finalText(final.data);
    const content = text !== '' ? text : answer.text;
    this.res.setHeader(TASK_ID_HEADER, task.id);
    sendJson(this.res, 200, completion(this.who, content, usageOf(final.data, final.meta, prompt, content)));
  }

  fail(error: HttpError, task: TaskHandle | undefined): void {
    sendError(this.res, error, task);
  }

  close(): void {}
}
