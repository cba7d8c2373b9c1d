/**
 * One model request of any API (chat completions, Anthropic messages, Responses) as one sub-agent
 * run: the part the three API adapters share. An adapter parses its body into a `Turn` and gives a
 * `TurnWriter` that speaks its wire format; this module does the rest, on the shared request-task
 * helper (src/gateway/request-task).
 *
 * Guarantees:
 * - a streamed and a non-streamed answer to the same run are the same text (`AnswerStream`);
 * - never an empty success: an agent that answers with data only gets that data as JSON text, one
 *   with nothing at all is a 502;
 * - a model whose CLI is missing is a 503 with the install hint, before anything runs;
 * - title/summary side requests are answered by the configured cheap path (`side_requests`);
 * - client system prompts and tools are handled by the documented policy (docs/gateway.md, "Tools
 *   and system prompts");
 * - a follow-up turn of a known session resumes the agent's session and sends only the new turn;
 * - a `worktree: true` model's session works in one git worktree: its first turn's task gets a new
 *   one, each later turn follows up the turn before in it, one turn at a time (./session-worktree.ts);
 * - a full queue is a 429 with `Retry-After`;
 * - one logical turn runs once: identical copies of a request (SDK retries) join its run
 *   (./turn-dedupe.ts), and failures a retry cannot fix say `x-should-retry: false`.
 */
import type { TaskHandle } from '../client/index.js';
import {
  createRequestTaskRunner,
  describeFailure,
  QueueFullError,
  type RequestTask,
  type RequestTaskOptions,
  type RequestTaskRunner,
  type TaskResult,
} from './request-task/index.js';
import { AnswerStream, usageOf } from './answer.js';
import type { ModelMode, ModelRoute } from './config.js';
import { HttpError } from './http.js';
import type { TurnWriter } from './writer.js';
import { buildPrompt, refuseRequiredToolCall, type Turn } from './request.js';
import { taskSpecFor } from './routes.js';
import { SessionWorktree, type WorktreeTurn } from './session-worktree.js';
import { sessionClaim, SessionRegistry, transcriptHash, type Session } from './sessions.js';
import { createTurnDedupe, NO_RETRY } from './turn-dedupe.js';
import type { GuardCounts } from './bridge/guard.js';
import type { BridgedRun } from './bridged-run.js';
import { continueBridged, retire, runBridgedTurn } from './bridged-turn.js';
import { isSideRequest, localTitle } from './side-requests.js';
import type { ModelRouting, RoutedTurn, TurnApi, TurnContext, TurnOutcome, TurnRunnerOptions } from './turn-context.js';
import { httpErrorFor, unavailableRoute } from './turn-errors.js';
import { newTurn, prepareMessages } from './turn-messages.js';
import { resumable } from './acp-model.js';

/**
 * Model names Claude Code picks by itself (`claude-opus-…`, `claude-haiku-…`): served by the default
 * model unless configured, so `ANTHROPIC_BASE_URL` alone is enough.
 */
const CLAUDE_MODEL = /^claude-[a-z0-9.-]+$/i;

export type { TurnWriter } from './writer.js';
export type { ModelRouting, TurnApi, TurnRunnerOptions } from './turn-context.js';
// What background responses (./background/) use of a turn's parts, where they have always found them.
export { TASK_ID_HEADER } from './writer.js';
export { httpErrorFor, unavailableRoute } from './turn-errors.js';
export { prepareMessages } from './turn-messages.js';

export interface TurnRunner {
  run(turn: Turn, abort: AbortController, writer: TurnWriter, api: TurnApi): Promise<void>;
  /** Why a route cannot run now (its CLI is missing), or undefined. */
  unavailable(route: ModelRoute): string | undefined;
  readonly inFlight: number;
  readonly sessions: number;
  /** Bridge mode's figures, for `/health`. */
  bridgeStats(): BridgeStats;
  shutdown(): Promise<void>;
}

/** Bridged runs since the gateway started and now, and the scratch-path guard's counts since it started. */
export interface BridgeStats {
  /** Bridged runs started since the gateway started. */
  runs: number;
  /** Bridged runs alive now (running or suspended). */
  active: number;
  suspended: number;
  violations: number;
  corrections: number;
}

export function createTurnRunner(options: TurnRunnerOptions): TurnRunner {
  const { tasks, config } = options;
  const runner: RequestTaskRunner = createRequestTaskRunner({
    tasks,
    timeoutMs: config.requestTimeoutMs,
    name: 'gateway',
    maxWaiting: config.maxQueued,
    slots: config.maxConcurrent,
    ...(options.limitConcurrency ? { maxConcurrent: config.maxConcurrent } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const dedupe = createTurnDedupe();
  const registry = new SessionRegistry(config.sessions.max, config.sessions.idleMs, (session) => options.workspaces.release(session.key));
  const bridges = new Map<BridgedRun, Session | undefined>();
  const guardTotals: GuardCounts = { violations: 0, corrections: 0 };
  const context: TurnContext = { options, runner, registry, bridges, guardTotals, bridgedRuns: 0, expiredCalls: new Map() };
  return {
    run: (turn, abort, writer, api) => dedupe.run(turn.identity, abort, writer, (own, shared) => runTurn(context, turn, own, shared, api)),
    unavailable: (route) => unavailableRoute(config, route),
    get inFlight() {
      return runner.inFlight;
    },
    get sessions() {
      return registry.size;
    },
    bridgeStats: () => ({
      runs: context.bridgedRuns,
      active: bridges.size,
      suspended: [...bridges.keys()].filter((run) => run.state === 'suspended').length,
      ...guardTotals,
    }),
    async shutdown() {
      await runner.shutdown();
      bridges.clear();
      context.expiredCalls.clear();
      dedupe.clear();
      registry.clear();
    },
  };
}

/** One turn: the local side path, or its route (404, 503) and its session's task; the session's bookkeeping after. */
async function runTurn(context: TurnContext, turn: Turn, abort: AbortController, writer: TurnWriter, api: TurnApi): Promise<void> {
  const { config } = context.options;
  const side = isSideRequest(turn.messages);
  if (side && config.sideRequests === 'local') {
    const text = localTitle(turn.messages);
    writer.finish({ text, usage: usageOf(undefined, undefined, buildPrompt(turn.messages), text) }, undefined);
    return;
  }
  const wanted = side && typeof config.sideRequests === 'object' ? config.sideRequests.model : (turn.model ?? config.defaultModel);
  const [model, route] = await findRoute(context.options, wanted);
  const missing = unavailableRoute(config, route);
  if (missing) throw new HttpError(503, missing, 'unavailable', 'agent_unavailable', null, NO_RETRY);
  if (abort.signal.aborted) return; // the client left while the body or the model list was read

  const purpose = side ? 'side' : 'main';
  if (await continueBridged(context, turn, { model, purpose, abort, writer })) return;
  const session = context.registry.acquire(sessionClaim(turn.sessionIds, turn.messages, model, purpose));
  // A run still waiting on tool calls that this request does not answer is over: it is replayed.
  if (session?.bridge && session.bridge.state !== 'ended') await retire(session.bridge, session);
  const outcome: TurnOutcome = {};
  try {
    await runRoutedTurn(context, { turn, model, route, session, api, abort, writer }, outcome);
  } finally {
    outcome.worktree?.done(outcome.task);
    const transcript =
      outcome.answered === undefined
        ? undefined
        : transcriptHash([...turn.messages, { role: 'assistant', content: outcome.answered }], model, purpose);
    if (session) context.registry.done(session, outcome.agentSession, transcript);
  }
}

/** The route, and the model name it goes by (a `claude-*` name Claude Code sends on its own → the default). */
export async function findRoute(options: ModelRouting, wanted: string): Promise<[string, ModelRoute]> {
  const route = await options.resolveModel(wanted);
  if (route) return [wanted, route];
  const model = CLAUDE_MODEL.test(wanted) ? options.config.defaultModel : wanted;
  const fallback = model === wanted ? undefined : await options.resolveModel(model);
  if (fallback) return [model, fallback];
  const known = (await options.knownModels()).join(', ');
  throw new HttpError(
    404,
    `The model \`${wanted}\` does not exist here (models: ${known}). Add it under \`models:\` in the gateway config.`,
    'not_found',
    'model_not_found',
    'model',
  );
}

/** The turn's task — in the session's worktree (waiting its turn), or its workspace — and its answer; `outcome` says what happened. */
async function runRoutedTurn(context: TurnContext, routed: RoutedTurn, outcome: TurnOutcome): Promise<void> {
  const { config, workspaces } = context.options;
  const { turn, session, abort } = routed;
  if (routed.route.worktree) {
    outcome.worktree = await worktreeTurn(routed.route.worktree.base, session, abort.signal);
    if (!outcome.worktree) return; // the client left while the turn before was still working
  }
  const mode = modeOf(routed.route, turn);
  if (mode === 'bridge' && !routed.route.worktree) return runBridgedTurn(context, routed, outcome);
  refuseRequiredToolCall(turn);
  const resume = resumable(routed.route) ? session?.agentSession : undefined;
  const messages = prepareMessages(resume ? newTurn(turn.messages) : turn.messages, turn, config, { mode });
  const prompt = buildPrompt(messages);
  const spec = taskSpecFor(config, {
    model: routed.model,
    route: routed.route,
    prompt,
    messages,
    stream: turn.stream,
    tags: { api: routed.api.name, ...(session ? { session: session.key } : {}) },
    ...(resume ? { resume } : {}),
    // A worktree is the session's own place (a scratch workspace would be no repository).
    ...(outcome.worktree
      ? { worktree: outcome.worktree.request }
      : session && config.sessionWorkspaces
        ? { cwd: workspaces.forSession(session.key) }
        : {}),
  });
  const writer = noticingAnswer(routed.writer, (text) => (outcome.answered = text));
  const ran = await runTask(context, { spec, prompt, abort, writer, json: turn.json, model: routed.model });
  outcome.agentSession = ran.agentSession;
  outcome.task = ran.task;
}

/**
 * How a model treats this request's tools: its `mode`, else bridge when the request offers tools;
 * a bridged model asked for no tool calls (`tool_choice: none`) answers in text only.
 */
export function modeOf(route: ModelRoute, turn: Turn): ModelMode {
  const mode = route.mode ?? 'bridge';
  if (mode === 'bridge' && turn.toolDefinitions.length === 0) return 'agent';
  return mode === 'bridge' && turn.forbidsToolCalls === true ? 'plan' : mode;
}

/**
 * This turn's place in its session's worktree, once the turn before is done with it; undefined when
 * the client left meanwhile. Nothing of a worktree model runs in the checkout: a side request's
 * session (its own) gets a worktree of its own too; sessions off, every request is one, in its own.
 */
async function worktreeTurn(
  base: string | undefined,
  session: Session | undefined,
  signal: AbortSignal,
): Promise<WorktreeTurn | undefined> {
  const shared = session ? (session.worktree ??= new SessionWorktree(base)) : new SessionWorktree(base);
  try {
    return await shared.turn(signal);
  } catch (error) {
    if (signal.aborted) return undefined;
    throw error;
  }
}

/** One turn's task and how its answer is written. */
interface TurnTask {
  spec: ReturnType<typeof taskSpecFor>;
  prompt: string;
  abort: AbortController;
  writer: TurnWriter;
  json: boolean;
  /** The model name, for a refusal's message. */
  model: string;
}

/**
 * Runs the task and writes its answer; resolves with the task (once submitted) and the agent's session id, if it gave one.
 * A failure before any task was submitted (a refusal, a queue deadline, the hub gone) is thrown, not
 * written: the turn dedupe then forgets it, and a copy of the request is asked anew, never answered
 * with a remembered refusal.
 */
async function runTask(context: TurnContext, { spec, prompt, abort, writer, json, model }: TurnTask): Promise<Ran> {
  const answer = new AnswerStream();
  const run = startTask(context.runner, spec, abort, (update, task) => {
    if (update.kind === 'partial') writer.delta(answer.push(update.payload?.data), task);
  });
  try {
    const final = await run.result;
    return writeAnswer(final, run.task!, { answer, prompt, writer, json });
  } catch (error) {
    const task = run.task ? { task: run.task } : {};
    if (run.why === 'disconnect') return task; // nobody is listening; the task is cancelled
    const timeoutMs = context.options.config.requestTimeoutMs;
    const failure = describeFailure(error, { why: run.why, timeoutMs, name: 'gateway', produced: answer.text });
    const httpError = httpErrorFor(failure, model, context.options.tasks.where.kind === 'hub');
    if (!run.task) throw httpError;
    writer.fail(httpError, run.task);
    return task;
  } finally {
    writer.close();
  }
}

/** What a turn's task left: the task (once submitted) and the agent's own session id, if it gave one. */
interface Ran {
  task?: TaskHandle;
  agentSession?: string;
}

/** Starts the request's task; a full queue is a 429 with `Retry-After`. */
function startTask(
  runner: RequestTaskRunner,
  spec: TurnTask['spec'],
  abort: AbortController,
  onUpdate: RequestTaskOptions['onUpdate'],
): RequestTask {
  try {
    return runner.start({ spec, abort, onUpdate });
  } catch (error) {
    if (!(error instanceof QueueFullError)) throw error;
    throw new HttpError(429, error.message, 'rate_limit', 'queue_full', null, { 'Retry-After': String(error.retryAfterSeconds) });
  }
}

/**
 * The task's answer, written: the rest of its text and the usage, or a 502 when it has none (no
 * text, no data) or is no JSON when JSON was asked for.
 */
function writeAnswer(
  final: TaskResult,
  task: TaskHandle,
  { answer, prompt, writer, json }: { answer: AnswerStream; prompt: string; writer: TurnWriter; json: boolean },
): Ran {
  const rest = answer.complete(final.data);
  if (rest === undefined) {
    const error = 'The sub-agent finished without an answer (no text, no data).';
    writer.fail(new HttpError(502, error, 'api', 'empty_answer', null, NO_RETRY), task);
    return { task };
  }
  if (json && !isJson(answer.text)) {
    const error = 'The sub-agent was asked for JSON but its answer is not valid JSON.';
    writer.fail(new HttpError(502, error, 'api', 'invalid_json', null, NO_RETRY), task);
    return { task };
  }
  if (rest !== '') writer.delta(rest, task);
  writer.finish({ text: answer.text, usage: usageOf(final.data, final.meta, prompt, answer.text) }, task);
  const data = final.data as { session_id?: unknown } | undefined;
  const meta = final.meta as { session_id?: unknown } | undefined;
  const id = data?.session_id ?? meta?.session_id;
  return typeof id === 'string' ? { task, agentSession: id } : { task };
}

/** `writer`, telling `onAnswer` the text it finished with (what the client will send back as the assistant's turn). */
function noticingAnswer(writer: TurnWriter, onAnswer: (text: string) => void): TurnWriter {
  return {
    delta: (text, task) => writer.delta(text, task),
    thinking: (text, task) => writer.thinking(text, task),
    toolCall: (call, task) => writer.toolCall(call, task),
    finish(answer, task) {
      onAnswer(answer.text);
      writer.finish(answer, task);
    },
    fail: (error, task) => writer.fail(error, task),
    close: () => writer.close(),
  };
}

/** Whether `text` is one JSON value (a JSON-mode answer). */
export function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
