/**
 * Responses background mode (`POST /v1/responses` with `background: true`): each response is a task
 * started detached through the one client, and its id is the task's id (./response-object.ts), so a
 * response outlives the request, the connection and — on a hub — the gateway itself.
 *
 * Guarantees:
 * - create answers at once, `queued` or `in_progress`; with `stream: true` it streams the response's
 *   events as they come, each with its `sequence_number`. At most `max_concurrent + max_queued`
 *   background responses of this gateway are unended at once: beyond, a 429 with `Retry-After`;
 * - retrieve gives the status and, once ended, the output and usage, or `error`; `stream=true` with
 *   `starting_after=N` replays the events after N, then follows: none lost, none repeated, as long as
 *   this gateway has followed the response since it started (a gateway started later numbers the
 *   events it sees from 0 again, from the task's picture: the final text is whole either way);
 * - cancel cancels the task (the broker stops its whole process tree) and answers once it ended,
 *   `cancelled`; an ended response is answered unchanged;
 * - delete forgets the response (cancelling it if it runs): retrieve is a 404 after, in this gateway
 *   (a gateway started later, which finds the task, answers for it until its keep time is over);
 * - nothing but the task is stored: the request's echoed parameters travel in its tags, the rest is
 *   the task's history, kept by the hub; an ended response is retrievable for `background_keep_ms`
 *   after it ended, then a 404 like an unknown id;
 * - only tasks this gateway kind started as background responses are answered for: any other task
 *   id is an unknown response.
 */
import type { ServerResponse } from 'node:http';
import type { BackchannelClient, TaskRun } from '../../client/index.js';
import { BridgeError, TaskError } from '../../client/index.js';
import { systemClock, type Clock } from '../../model/clock.js';
import { isFinished, type TaskSnapshot, type TaskState } from '../../model/task.js';
import { AnswerStream, usageOf } from '../answer.js';
import { HttpError, sendJson } from '../http.js';
import { buildPrompt, InvalidRequest, type Turn } from '../request.js';
import { describeFailure, RETRY_AFTER_SECONDS, SseResponder, stoppedText } from '../request-task/index.js';
import { taskSpecFor } from '../routes.js';
import { findRoute, httpErrorFor, isJson, prepareMessages, TASK_ID_HEADER, unavailableRoute, type ModelRouting } from '../turn.js';
import { NO_RETRY } from '../turn-dedupe.js';
import {
  outputItem,
  responseObject,
  ResponseEvents,
  sseOf,
  taskIdOf,
  type ResponseEvent,
  type ResponseFacts,
  type ResponseStatus,
} from './response-object.js';

/** The tags that mark a task as a background response, and carry what its `response` object repeats. */
const TAG = { background: 'background', echo: 'response_echo' } as const;
/** A tag value's limit (the task request's `MAX_STRING`): a bigger echo keeps its small fields only. */
const MAX_TAG_CHARS = 4096;
/** The reason the panel shows for a response cancelled or deleted through the API. */
const CANCEL_REASON = 'cancelled through the Responses API';

export interface BackgroundOptions extends ModelRouting {
  tasks: BackchannelClient;
  keepAliveMs: number;
  /** What the keep time is measured on (a test's fake clock). @default systemClock */
  clock?: Clock;
}

export interface BackgroundResponses {
  /** `POST /v1/responses` with `background: true`: `body` is the parsed request, `turn` its `Turn`. */
  create(body: Record<string, unknown>, turn: Turn, res: ServerResponse): Promise<void>;
  /** `GET /v1/responses/{id}` (with `stream=true&starting_after=N`: the events). */
  retrieve(responseId: string, query: URLSearchParams, res: ServerResponse): Promise<void>;
  cancel(responseId: string, res: ServerResponse): Promise<void>;
  delete(responseId: string, res: ServerResponse): Promise<void>;
  /** Stops following the tasks (they go on: on a hub, another gateway answers for them). */
  close(): void;
}

export function createBackgroundResponses(options: BackgroundOptions): BackgroundResponses {
  return new BackgroundTable(options);
}

/** The background responses this gateway follows, by task id, and those it was told to forget. */
class BackgroundTable implements BackgroundResponses {
  private readonly live = new Map<string, LiveResponse>();
  private readonly deleted = new Set<string>();
  private readonly keepMs: number;
  private readonly clock: Clock;

  constructor(private readonly options: BackgroundOptions) {
    this.keepMs = options.config.backgroundKeepMs;
    this.clock = options.clock ?? systemClock;
  }

  async create(body: Record<string, unknown>, turn: Turn, res: ServerResponse): Promise<void> {
    this.checkRoom();
    if (body.store === false)
      throw new InvalidRequest('Background mode requires `store: true`: a background response is kept to be retrieved.', 'store');
    const { id, model, prompt, echo } = await startResponseTask(this.options, turn);
    const response = this.track(id, model, echo, Math.floor(Date.now() / 1000), prompt, turn.json);
    await response.following;
    if (turn.stream) return streamEvents(response, -1, res, this.options.keepAliveMs);
    res.setHeader(TASK_ID_HEADER, id);
    sendJson(res, 200, response.object());
  }

  async retrieve(responseId: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
    const response = await this.find(responseId);
    if (query.get('stream') !== 'true') {
      res.setHeader(TASK_ID_HEADER, response.taskId);
      return sendJson(res, 200, response.object());
    }
    const after = startingAfter(query.get('starting_after'));
    streamEvents(response, after, res, this.options.keepAliveMs);
  }

  async cancel(responseId: string, res: ServerResponse): Promise<void> {
    const response = await this.find(responseId);
    if (!response.isEnded) {
      await this.options.tasks.cancel(response.taskId, CANCEL_REASON).catch(() => {}); // it ended meanwhile
      await response.ended;
      // Once the agent ended (Y50): its process tree gone, not only the task decided `cancelled`.
      await response.gone;
    }
    res.setHeader(TASK_ID_HEADER, response.taskId);
    sendJson(res, 200, response.object());
  }

  async delete(responseId: string, res: ServerResponse): Promise<void> {
    const response = await this.find(responseId);
    if (!response.isEnded) await this.options.tasks.cancel(response.taskId, CANCEL_REASON).catch(() => {});
    const { taskId } = response;
    this.deleted.add(taskId);
    this.forget(taskId);
    // Past the keep time it is expired anyway: the set stays as small as the responses kept.
    this.clock.after(this.keepMs, () => this.deleted.delete(taskId));
    sendJson(res, 200, { id: responseId, object: 'response', deleted: true });
  }

  close(): void {
    for (const taskId of [...this.live.keys()]) this.forget(taskId);
  }

  /** A 429 with `Retry-After` while this gateway's unended background responses fill its bound. */
  private checkRoom(): void {
    const unended = [...this.live.values()].filter((r) => !r.isEnded).length;
    const bound = this.options.config.maxConcurrent + this.options.config.maxQueued;
    if (unended < bound) return;
    throw new HttpError(
      429,
      `${unended} background responses of this gateway have not ended (max_concurrent + max_queued = ${bound}); try again in ${RETRY_AFTER_SECONDS} s.`,
      'rate_limit',
      'queue_full',
      null,
      { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    );
  }

  /** The response, followed from now on if this gateway did not yet; a 404 when there is none (any more). */
  private async find(responseId: string): Promise<LiveResponse> {
    const taskId = taskIdOf(responseId);
    if (taskId === undefined || this.deleted.has(taskId)) throw notFound(responseId);
    let response = this.live.get(taskId);
    if (response?.lost) {
      this.forget(taskId); // followed until the hub went away: read it again from whoever runs it now
      response = undefined;
    }
    if (!response) {
      const snapshot = (await this.options.tasks.getTask(taskId).catch(unlessNotFound))?.task;
      if (!snapshot || snapshot.tags?.[TAG.background] !== 'true' || snapshot.tags.source !== 'gateway') throw notFound(responseId);
      response =
        this.live.get(taskId) ??
        this.track(taskId, snapshot.tags.model ?? 'unknown', echoFromTags(snapshot), createdOf(snapshot), '', false);
      await response.following;
    }
    if (response.expired(this.keepMs, this.clock.now())) {
      this.forget(taskId);
      throw notFound(responseId);
    }
    return response;
  }

  private track(taskId: string, model: string, echo: Record<string, unknown>, createdAt: number, prompt: string, json: boolean) {
    const response = new LiveResponse(this.options, { taskId, model, echo, createdAt, prompt, json });
    this.live.set(taskId, response);
    void response.ended.then(() => {
      this.clock.after(this.keepMs, () => this.forget(taskId));
    });
    return response;
  }

  private forget(taskId: string): void {
    this.live.get(taskId)?.stop();
    this.live.delete(taskId);
  }
}

/** Starts a background response's task, detached: its id, model, prompt and echo; the API's errors when it cannot. */
async function startResponseTask(
  options: BackgroundOptions,
  turn: Turn,
): Promise<{ id: string; model: string; prompt: string; echo: Record<string, unknown> }> {
  const [model, route] = await findRoute(options, turn.model ?? options.config.defaultModel);
  const missing = unavailableRoute(options.config, route);
  if (missing) throw new HttpError(503, missing, 'unavailable', 'agent_unavailable', null, NO_RETRY);
  const messages = prepareMessages(turn.messages, turn, options.config);
  const prompt = buildPrompt(messages);
  const echo = turn.echo ?? {};
  const spec = taskSpecFor(options.config, {
    model,
    route,
    prompt,
    messages,
    stream: turn.stream,
    tags: { api: 'responses', [TAG.background]: 'true', [TAG.echo]: echoTag(echo) },
  });
  try {
    const { id } = await options.tasks.start(spec);
    return { id, model, prompt, echo };
  } catch (error) {
    const failure = describeFailure(error, { why: undefined, timeoutMs: options.config.requestTimeoutMs, name: 'gateway' });
    throw httpErrorFor(failure, model, options.tasks.where.kind === 'hub');
  }
}

/** A failed look-up: undefined for an unknown task, a 503 when the tasks cannot be reached (the hub went away). */
function unlessNotFound(error: unknown): undefined {
  if (BridgeError.is(error) && error.code === 'not_found') return undefined;
  throw new HttpError(503, `The gateway cannot reach its tasks: ${(error as Error).message}`, 'unavailable', 'unavailable');
}

/** `starting_after`: a sequence number (absent: every event). */
function startingAfter(value: string | null): number {
  if (value === null || value === '') return -1;
  if (!/^\d+$/.test(value)) throw new InvalidRequest('`starting_after` must be a sequence number (an integer ≥ 0).', 'starting_after');
  return Number(value);
}

function notFound(responseId: string): HttpError {
  return new HttpError(
    404,
    `No response with id '${responseId}' found (only background responses are stored; an ended one is kept for background_keep_ms).`,
    'not_found',
    null,
    null,
  );
}

/** The echo as a tag value: whole when it fits, else without the big fields (the tools, the instructions). */
function echoTag(echo: Record<string, unknown>): string {
  const whole = JSON.stringify(echo);
  if (whole.length <= MAX_TAG_CHARS) return whole;
  const { tools: _tools, instructions: _instructions, metadata: _metadata, ...small } = echo;
  return JSON.stringify(small).slice(0, MAX_TAG_CHARS);
}

function echoFromTags(snapshot: TaskSnapshot): Record<string, unknown> {
  const defaults = {
    instructions: null,
    metadata: {},
    tools: [],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    temperature: null,
    top_p: null,
  };
  try {
    const parsed = JSON.parse(snapshot.tags?.[TAG.echo] ?? '{}') as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? { ...defaults, ...parsed } : defaults;
  } catch {
    return defaults;
  }
}

function createdOf(snapshot: TaskSnapshot): number {
  return Math.floor(Date.parse(snapshot.createdAt) / 1000);
}

/** The events after `after`, then each new one, as an SSE stream that ends with the response. */
function streamEvents(response: LiveResponse, after: number, res: ServerResponse, keepAliveMs: number): void {
  const sse = new SseResponder(res, keepAliveMs);
  sse.start({ [TASK_ID_HEADER]: response.taskId }, '');
  const stop = response.events.follow(
    after,
    (event: ResponseEvent) => sse.write(sseOf(event)),
    () => sse.end(''),
  );
  res.on('close', () => {
    stop();
    sse.close();
  });
}

interface LiveFacts {
  taskId: string;
  model: string;
  echo: Record<string, unknown>;
  createdAt: number;
  /** The prompt, for a usage estimate ('' for a response found again after a restart). */
  prompt: string;
  json: boolean;
}

/** One background response this gateway follows: its task's state, its answer, its events. */
class LiveResponse {
  readonly events = new ResponseEvents();
  /** Settles once this gateway follows the task (its picture known). */
  readonly following: Promise<void>;
  /** Settles when the response ended (completed, failed or cancelled). */
  readonly ended: Promise<void>;
  /** Settles once the task's processes are gone (or it is no longer followed). */
  readonly gone: Promise<void>;
  /** Its follow stream broke (the hub went away): what it says now is not the task's end. */
  lost = false;
  #state: TaskState = 'queued';
  #answer = new AnswerStream();
  #final: ResponseFacts['answer'];
  #error: ResponseFacts['error'];
  /** What the agent had written when its task was stopped (kept in the failed or cancelled object). */
  #kept = '';
  #endedAt: number | undefined;
  #started = false;
  #run: TaskRun | undefined;
  #markEnded!: () => void;
  #markGone!: () => void;

  constructor(
    private readonly options: BackgroundOptions,
    private readonly facts: LiveFacts,
  ) {
    this.ended = new Promise<void>((resolve) => (this.#markEnded = resolve));
    this.gone = new Promise<void>((resolve) => (this.#markGone = resolve));
    this.following = this.#follow();
  }

  get taskId(): string {
    return this.facts.taskId;
  }

  get isEnded(): boolean {
    return this.#endedAt !== undefined;
  }

  expired(keepMs: number, now: number): boolean {
    return this.#endedAt !== undefined && now - this.#endedAt > keepMs;
  }

  stop(): void {
    this.#run?.stop();
    this.events.end();
    this.#markGone();
  }

  status(): ResponseStatus {
    if (this.#final) return 'completed';
    if (this.#error) return 'failed';
    if (this.#state === 'cancelled') return 'cancelled';
    return this.#state === 'queued' ? 'queued' : 'in_progress';
  }

  object(): Record<string, unknown> {
    return responseObject({
      taskId: this.facts.taskId,
      model: this.facts.model,
      echo: this.facts.echo,
      createdAt: this.facts.createdAt,
      status: this.status(),
      ...(this.#endedAt !== undefined ? { completedAt: Math.floor(this.#endedAt / 1000) } : {}),
      ...(this.#final ? { answer: this.#final } : {}),
      ...(this.#error ? { error: this.#error } : {}),
      ...(this.#kept && !this.#final ? { keptText: this.#kept } : {}),
    });
  }

  async #follow(): Promise<void> {
    let run: TaskRun;
    try {
      run = await this.options.tasks.follow(this.facts.taskId);
    } catch (error) {
      this.lost = true; // not the task's end: the next look-up tries again
      this.#fail(`The gateway could not follow the task: ${(error as Error).message}`);
      this.#markGone();
      return;
    }
    this.#run = run;
    void run.finished.then(() => this.#markGone());
    this.#state = run.snapshot().state;
    this.events.push('response.created', { response: this.object() });
    if (this.#state === 'queued') this.events.push('response.queued', { response: this.object() });
    if (this.#state !== 'queued' && !isFinished(this.#state)) this.#start();
    run.on('update', (update) => {
      if (isFinished(update.state)) return; // settled by the result below, with the whole payload
      this.#state = update.state;
      if (update.kind === 'partial') {
        const text = this.#answer.push(update.payload?.data);
        this.#start();
        if (text !== '') this.#delta(text);
      } else if (update.kind === 'started') this.#start();
    });
    run.result.then(
      (final) => this.#succeed(final.data, final.meta, run.snapshot()),
      (error: unknown) => this.#settleFailure(error, run),
    );
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    const where = { item_id: outputItem(this.facts.taskId, undefined).id, output_index: 0, content_index: 0 };
    this.events.push('response.in_progress', { response: { ...this.object(), status: 'in_progress' } });
    this.events.push('response.output_item.added', { output_index: 0, item: outputItem(this.facts.taskId, undefined) });
    this.events.push('response.content_part.added', { ...where, part: { type: 'output_text', text: '', annotations: [] } });
  }

  #delta(text: string): void {
    const item_id = outputItem(this.facts.taskId, undefined).id;
    this.events.push('response.output_text.delta', { item_id, output_index: 0, content_index: 0, delta: text, logprobs: [] });
  }

  #succeed(data: unknown, meta: unknown, snapshot: TaskSnapshot): void {
    const rest = this.#answer.complete(data);
    if (rest === undefined) return this.#fail('The sub-agent finished without an answer (no text, no data).', snapshot);
    const text = this.#answer.text;
    if (this.facts.json && !isJson(text)) return this.#fail('The sub-agent was asked for JSON but its answer is not valid JSON.', snapshot);
    this.#start();
    if (rest !== '') this.#delta(rest);
    this.#state = 'succeeded';
    this.#final = { text, usage: usageOf(data, meta, this.facts.prompt, text) };
    this.#endedAt = endedAt(snapshot);
    const where = { item_id: outputItem(this.facts.taskId, undefined).id, output_index: 0, content_index: 0 };
    const part = { type: 'output_text', text, annotations: [] };
    this.events.push('response.output_text.done', { ...where, text, logprobs: [] });
    this.events.push('response.content_part.done', { ...where, part });
    this.events.push('response.output_item.done', { output_index: 0, item: outputItem(this.facts.taskId, text) });
    this.events.push('response.completed', { response: this.object() });
    this.#end();
  }

  #settleFailure(error: unknown, run: TaskRun): void {
    const snapshot = run.snapshot();
    // A stopped task's answer so far stays in the object's output (its partial result's text when nothing streamed).
    this.#kept = stoppedText(error, this.#answer.text);
    if (TaskError.is(error) && error.reason === 'cancelled') {
      this.#state = 'cancelled';
      this.#endedAt = endedAt(snapshot);
      return this.#end(); // the stream just ends: a retrieve says `cancelled`
    }
    const failure = describeFailure(error, {
      why: undefined,
      timeoutMs: this.options.config.requestTimeoutMs,
      name: 'gateway',
      produced: this.#kept,
    });
    // The hub went away, not the task: the next look-up reads the task again (its own end, if it has one).
    if (failure.kind === 'unavailable') this.lost = true;
    this.#fail(failure.message, snapshot);
  }

  #fail(message: string, snapshot?: TaskSnapshot): void {
    this.#state = 'failed';
    this.#error = { code: 'server_error', message };
    this.#endedAt = snapshot ? endedAt(snapshot) : Date.now();
    if (this.events.length === 0) this.events.push('response.created', { response: this.object() });
    this.events.push('response.failed', { response: this.object() });
    this.#end();
  }

  #end(): void {
    this.events.end();
    this.#markEnded();
    // Followed until its processes are gone, so a cancel can answer once the agent ended.
    const run = this.#run;
    if (run) void run.finished.then(() => run.stop());
    else this.#markGone();
  }
}

function endedAt(snapshot: TaskSnapshot): number {
  const at = snapshot.endedAt ? Date.parse(snapshot.endedAt) : Number.NaN;
  return Number.isFinite(at) ? at : Date.now();
}
