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
import { randomUUID } from 'node:crypto';
import type { TaskHandle } from '../client/index.js';
import {
  createRequestTaskRunner,
  describeFailure,
  QueueFullError,
  type BackchannelClient,
  type RequestTask,
  type RequestTaskOptions,
  type RequestTaskRunner,
  type TaskFailure,
  type TaskResult,
} from './request-task/index.js';
import { AnswerStream, usageOf } from './answer.js';
import { LONG_SYSTEM_PROMPT_CHARS, type GatewayConfig, type ModelMode, type ModelRoute } from './config.js';
import { findExecutable } from './cursor-cli.js';
import type { ServerResponse } from 'node:http';
import { HttpError, sendJson } from './http.js';
import type { AnswerExtras, TurnAnswer, TurnWriter } from './writer.js';
import { buildPrompt, InvalidRequest, refuseRequiredToolCall, type ChatMessage, type RequiredCall, type Turn } from './request.js';
import { taskSpecFor } from './routes.js';
import { SessionWorktree, type WorktreeTurn } from './session-worktree.js';
import { sessionClaim, SessionRegistry, transcriptHash, type Session } from './sessions.js';
import type { Workspaces } from './workspaces.js';
import { createTurnDedupe, NO_RETRY } from './turn-dedupe.js';
import { hostEnvOf, topology, writeRules, type HostEnv } from './bridge/anchor.js';
import type { GuardCounts } from './bridge/guard.js';
import { BridgedRun, type BridgedRunOptions } from './bridge/run.js';
import type { ToolResultIn } from './bridge/wire.js';
import type { CancelWhy } from './request-task/index.js';

export const TASK_ID_HEADER = 'X-Backchannel-Task-Id';

/** A title generator's own words (OpenCode, Claude Code, Kilo …): such a request is a side request. */
const SIDE_REQUEST =
  /\btitle generator\b|\bgenerate (?:a|an) (?:brief |short |concise )?(?:title|summary)\b|\bwrite a \d+-\d+ word title\b/i;
/**
 * Model names Claude Code picks by itself (`claude-opus-…`, `claude-haiku-…`): served by the default
 * model unless configured, so `ANTHROPIC_BASE_URL` alone is enough.
 */
const CLAUDE_MODEL = /^claude-[a-z0-9.-]+$/i;
/** Longest title the local side path answers with (OpenCode asks for ≤ 50). */
const TITLE_CHARS = 50;

export type { AnswerExtras, ClientToolCall, TurnAnswer, TurnWriter } from './writer.js';

export interface TurnRunnerOptions {
  /** Where the tasks run: the gateway's own broker, an embedding app's, or the hub's. */
  tasks: BackchannelClient;
  config: GatewayConfig;
  /** The route for a model name, or undefined (→ 404 listing `knownModels()`). */
  resolveModel(model: string): Promise<ModelRoute | undefined>;
  knownModels(): Promise<string[]>;
  /** Cap the gateway's own running tasks (a shared broker's or the hub's concurrency is not ours to set). */
  limitConcurrency: boolean;
  /** The private scratch directories: bridged runs always run in one, every session with `session_workspaces`. */
  workspaces: Workspaces;
}

/** How a model name finds its route (what a background response needs of the runner's options). */
export type ModelRouting = Pick<TurnRunnerOptions, 'config' | 'resolveModel' | 'knownModels'>;

export interface TurnRunner {
  run(turn: Turn, abort: AbortController, writer: TurnWriter, api: string): Promise<void>;
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
  });
  const dedupe = createTurnDedupe();
  const registry = new SessionRegistry(config.sessions.max, config.sessions.idleMs, (session) => options.workspaces.release(session.key));
  const bridges = new Map<BridgedRun, Session | undefined>();
  const guardTotals: GuardCounts = { violations: 0, corrections: 0 };
  const context: TurnContext = { options, runner, registry, bridges, guardTotals, bridgedRuns: 0 };
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
      dedupe.clear();
      registry.clear();
    },
  };
}

/** What every turn of one runner shares. */
interface TurnContext {
  options: TurnRunnerOptions;
  runner: RequestTaskRunner;
  registry: SessionRegistry;
  /** Bridged runs alive (running or suspended on the client's tool calls), with the session each holds. */
  bridges: Map<BridgedRun, Session | undefined>;
  guardTotals: GuardCounts;
  /** Bridged runs started since the runner was made (`/health`'s `bridge.runs`). */
  bridgedRuns: number;
}

/** One turn on its route, in its session (if any): what it asks the task, and where. */
interface RoutedTurn {
  turn: Turn;
  model: string;
  route: ModelRoute;
  session: Session | undefined;
  api: string;
  abort: AbortController;
  writer: TurnWriter;
}

/** What a turn leaves for its session once it is over. */
interface TurnOutcome {
  worktree?: WorktreeTurn;
  task?: TaskHandle;
  agentSession?: string;
  /** The text the turn answered with (what the client will send back as the assistant's turn). */
  answered?: string;
}

/** One turn: the local side path, or its route (404, 503) and its session's task; the session's bookkeeping after. */
async function runTurn(context: TurnContext, turn: Turn, abort: AbortController, writer: TurnWriter, api: string): Promise<void> {
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
  const resume = session?.agentSession;
  const messages = prepareMessages(resume ? newTurn(turn.messages) : turn.messages, turn, config, { mode });
  const prompt = buildPrompt(messages);
  const spec = taskSpecFor(config, {
    model: routed.model,
    route: routed.route,
    prompt,
    messages,
    stream: turn.stream,
    tags: { api: routed.api, ...(session ? { session: session.key } : {}) },
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

/** How a model treats this request's tools: its `mode`, else bridge when the request offers tools. */
export function modeOf(route: ModelRoute, turn: Turn): ModelMode {
  const mode = route.mode ?? 'bridge';
  return mode === 'bridge' && turn.toolDefinitions.length === 0 ? 'agent' : mode;
}

/** The API's prefix of tool-call ids, by API name. */
const CALL_ID_PREFIX: Record<string, string> = { chat: 'call_', responses: 'call_', messages: 'toolu_' };

/**
 * A bridged turn: a new run of the agent with the client's tools, written to this request until its
 * first step of tool calls (or its answer). The run holds its session until it ends. The agent runs
 * in a private scratch directory, never in `workspace` or the model's `cwd` (which may be the very
 * project the client works in): its session's, or the run's own, deleted when the run ends.
 */
async function runBridgedTurn(context: TurnContext, routed: RoutedTurn, outcome: TurnOutcome): Promise<void> {
  const { config, workspaces } = context.options;
  const { turn, session, abort } = routed;
  const resume = session?.agentSession;
  const scratchKey = session?.key ?? `run-${randomUUID()}`;
  const cwd = workspaces.forSession(scratchKey);
  const env = hostEnvOf(turn.messages);
  writeRules(cwd, env);
  const messages = prepareMessages(resume ? newTurn(turn.messages) : turn.messages, turn, config, { mode: 'bridge', env, workspace: cwd });
  const prompt = buildPrompt(messages);
  const spec = {
    ...taskSpecFor(config, {
      model: routed.model,
      route: routed.route,
      prompt,
      messages,
      stream: turn.stream,
      tags: { api: routed.api, mode: 'bridge', ...(session ? { session: session.key } : {}) },
      ...(resume ? { resume } : {}),
      cwd,
    }),
    tools: turn.toolDefinitions,
  };
  const purpose = isSideRequest(turn.messages) ? 'side' : 'main';
  const counts = session ? (session.guard ??= { violations: 0, corrections: 0 }) : { violations: 0, corrections: 0 };
  if (session) context.registry.hold(session);
  let last = turn.messages;
  const run: BridgedRun = startBridgedRun(
    {
      runner: context.runner,
      spec,
      prompt,
      idPrefix: CALL_ID_PREFIX[routed.api] ?? 'call_',
      workspace: cwd,
      ...(env?.root ? { hostRoot: env.root } : {}),
      counts: countingInto(counts, context.guardTotals),
      idleMs: config.sessions.idleMs,
      missingCall,
      failure: (error, why) =>
        httpErrorFor(
          describeFailure(error, { why: why as CancelWhy, timeoutMs: config.requestTimeoutMs, name: 'gateway' }),
          routed.model,
          context.options.tasks.where.kind === 'hub',
        ),
      onEnd(ended, result) {
        context.bridges.delete(ended);
        if (!session) return workspaces.release(scratchKey);
        if (session.bridge === ended) session.bridge = undefined;
        const transcript =
          result.answered === undefined
            ? undefined
            : transcriptHash([...last, { role: 'assistant', content: result.answered }], routed.model, purpose);
        context.registry.done(session, result.agentSession, transcript);
      },
    },
    () => session === undefined && workspaces.release(scratchKey),
  );
  run.onHistory = (messages) => (last = messages);
  context.bridgedRuns += 1;
  context.bridges.set(run, session);
  if (session) session.bridge = run;
  run.history = transcriptHash(turn.messages, routed.model, purpose);
  await run.attach(routed.writer, abort, turn.thinking, turn.requiresToolCall);
  outcome.task = run.task;
}

/** A new run; when it cannot start, the scratch directory made for it alone goes again. */
function startBridgedRun(options: BridgedRunOptions, release: () => void): BridgedRun {
  try {
    return new BridgedRun(options);
  } catch (error) {
    release();
    throw error;
  }
}

/**
 * A bridged answer without the call the request's `tool_choice` required: the API promises a call,
 * so text alone is no answer to give. A 502 like an answer that is not the JSON asked for.
 */
export function missingCall(required: RequiredCall): HttpError {
  const which = required.name === undefined ? 'a tool call' : `a call to \`${required.name}\``;
  return new HttpError(
    502,
    `The request's \`tool_choice\` requires ${which}, but the sub-agent answered without one.`,
    'api',
    'tool_call_missing',
    null,
    NO_RETRY,
  );
}

/** `counts`, each increment also added to `totals`. */
function countingInto(counts: GuardCounts, totals: GuardCounts): GuardCounts {
  return {
    get violations() {
      return counts.violations;
    },
    set violations(value) {
      totals.violations += value - counts.violations;
      counts.violations = value;
    },
    get corrections() {
      return counts.corrections;
    },
    set corrections(value) {
      totals.corrections += value - counts.corrections;
      counts.corrections = value;
    },
  };
}

/**
 * The results at the end of a transcript, whether they come with text of the user's own, and what
 * comes before the assistant turn they answer.
 */
export function trailingResults(messages: ChatMessage[]): { results: ToolResultIn[]; steering: boolean; prefix: ChatMessage[] } {
  let end = messages.length;
  const results: ToolResultIn[] = [];
  let steering = false;
  while (end > 0 && messages[end - 1]!.tools?.results) {
    const tools = messages[end - 1]!.tools!;
    results.unshift(...tools.results!);
    steering ||= tools.steering === true;
    end -= 1;
  }
  let start = end;
  while (start > 0 && messages[start - 1]!.role === 'assistant') start -= 1;
  return { results, steering, prefix: messages.slice(0, start) };
}

/** A 400 for a result whose call no assistant message of the request made (the API's own rule). */
export function checkResultIds(messages: ChatMessage[]): void {
  const calls = new Set(messages.flatMap((m) => m.tools?.calls?.map((call) => call.id) ?? []));
  for (const message of messages) {
    for (const result of message.tools?.results ?? []) {
      if (!calls.has(result.id))
        throw new InvalidRequest(
          `A tool result answers the call \`${result.id}\`, which no assistant message in this conversation made.`,
          'messages',
        );
    }
  }
}

/**
 * Continues the suspended run whose calls this request's results answer, when it safely can: the
 * results are exactly its pending calls, the history is what it was, nothing new was said. Else the
 * run is retired and the request is a new turn (the whole transcript replayed). True when continued.
 */
async function continueBridged(
  context: TurnContext,
  turn: Turn,
  { model, purpose, abort, writer }: { model: string; purpose: 'main' | 'side'; abort: AbortController; writer: TurnWriter },
): Promise<boolean> {
  checkResultIds(turn.messages);
  const { results, steering, prefix } = trailingResults(turn.messages);
  if (results.length === 0) return false;
  const run = [...context.bridges.keys()].find((r) => results.some((result) => r.pending.has(result.id)));
  if (!run) return false;
  const session = context.bridges.get(run);
  if (run.state === 'suspended' && run.matches(results) && !steering && run.history === transcriptHash(prefix, model, purpose)) {
    run.history = transcriptHash(turn.messages, model, purpose);
    run.onHistory?.(turn.messages);
    try {
      await run.continueWith(results, writer, abort, turn.thinking, turn.requiresToolCall);
      return true;
    } catch {
      // The task no longer waits on those calls: replayed below.
    }
  }
  await retire(run, session);
  return false;
}

/** Retires a run another turn replaces: its agent session is not resumed (the replay carries the whole transcript). */
async function retire(run: { retire(): Promise<void> }, session: Session | undefined): Promise<void> {
  await run.retire();
  if (session) session.agentSession = undefined;
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

/** Why a route cannot run on this machine (its CLI is missing, with the install hint), or undefined. */
export function unavailableRoute(config: GatewayConfig, route: ModelRoute): string | undefined {
  if (route.kind === 'cursor-cli' && !findExecutable(config.cursorCliPath))
    return (
      `The Cursor CLI ("${config.cursorCliPath}") is not installed: install it with ` +
      '`curl https://cursor.com/install -fsS | bash` (then `agent login` or CURSOR_API_KEY), or set `cursor_cli_path`.'
    );
  // The agent runs the model's CLAUDE_BIN when the model's env sets one (templates/claude-code).
  if (route.kind === 'claude-code' && !findExecutable(route.env.CLAUDE_BIN || process.env.CLAUDE_BIN || 'claude'))
    return 'Claude Code (`claude`) is not installed: `npm install -g @anthropic-ai/claude-code`, or set CLAUDE_BIN.';
  return undefined;
}

/**
 * A task failure as a status the clients of every API understand. Only `unavailable` (the gateway
 * is shutting down, the hub went away) may go better on a retry; the agent's own failure or
 * deadline would only repeat, spending again. A refusal is a 403 that names where the model must be
 * allowed: on a hub, the hub's config file (which it reads again when it changes), not this gateway's.
 */
export function httpErrorFor(failure: TaskFailure, model: string, onHub: boolean): HttpError {
  switch (failure.kind) {
    case 'refused': {
      const where = onHub
        ? ' A gateway on a hub runs what the hub allows: the `command` models of the `gateway:` section of the ' +
          "hub's config file (which it reads again when it changes), its presets and its `run_policy:`. Add the model " +
          "there, or run this gateway with --local to run its models in the gateway's own broker."
        : '';
      return new HttpError(403, `The model \`${model}\` may not run: ${failure.message}.${where}`, 'permission', 'refused', null, NO_RETRY);
    }
    case 'timeout':
      return new HttpError(504, failure.message, 'timeout', 'timeout', null, NO_RETRY);
    case 'unavailable':
      return new HttpError(503, failure.message, 'unavailable', 'unavailable');
    case 'internal':
      return new HttpError(500, failure.message, 'api', 'internal_error', null, NO_RETRY);
    case 'agent':
      return new HttpError(500, failure.message, 'api', `agent_${failure.reason}`, null, NO_RETRY);
  }
}

/** A title/summary request a client makes on the side of the real one. */
export function isSideRequest(messages: ChatMessage[]): boolean {
  return messages.some((m) => (m.role === 'system' || m.role === 'developer') && SIDE_REQUEST.test(m.content.slice(0, 500)));
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

/** The local side path: the last user text's first line, unquoted, as a title. */
export function localTitle(messages: ChatMessage[]): string {
  const users = messages.filter((m) => m.role === 'user' && m.content.trim() !== '');
  const text = (users.at(-1)?.content ?? 'New conversation').trim();
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? text).trim().replace(/^["'“]+|["'”]+$/g, '');
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1).trimEnd()}…` : line;
}

/** The messages after the last assistant message: what a resumed agent session has not seen. */
export function newTurn(messages: ChatMessage[]): ChatMessage[] {
  const last = messages.map((m) => m.role).lastIndexOf('assistant');
  const rest = messages.slice(last + 1).filter((m) => m.role !== 'system' && m.role !== 'developer');
  return rest.length > 0 ? rest : messages;
}

/**
 * The messages as the sub-agent gets them: long client system prompts summarised (`auto`) or
 * dropped, one line naming the client's tools (never their definitions), and the JSON instruction.
 */
export function prepareMessages(
  messages: ChatMessage[],
  turn: Turn,
  config: GatewayConfig,
  bridge: { mode: ModelMode; env?: HostEnv | undefined; workspace?: string } = { mode: 'agent' },
): ChatMessage[] {
  const policy = config.clientSystemPrompt;
  const out = messages
    .filter((m) => policy !== 'drop' || (m.role !== 'system' && m.role !== 'developer'))
    .map((m) =>
      policy === 'auto' && (m.role === 'system' || m.role === 'developer') && m.content.length > LONG_SYSTEM_PROMPT_CHARS
        ? {
            ...m,
            content: `[The client's ${m.role} prompt (${m.content.length} characters, about its own tools and conventions) is left out.]`,
          }
        : m,
    );
  const notes: string[] = [];
  if (bridge.mode === 'bridge') {
    const where = topology(bridge.env, bridge.workspace);
    notes.push(`Use the client's tools (${turn.toolDefinitions.map((t) => t.name).join(', ')}) for files and commands. ${where}`);
    if (turn.requiresToolCall) notes.push(requiredCallNote(turn.requiresToolCall));
    out.push({ role: 'system', content: where });
  } else if (bridge.mode === 'plan') notes.push('Answer in text only: do not call tools, run commands or change files.');
  else if (turn.tools.length > 0)
    notes.push(`The client offered tools you cannot call (${turn.tools.slice(0, 20).join(', ')}); use your own tools instead.`);
  if (turn.json) notes.push('Answer with one valid JSON value only: no prose, no code fences.');
  if (notes.length > 0) out.unshift({ role: 'system', content: notes.join('\n') });
  return out;
}

/** What the agent is told of a call the client's `tool_choice` requires. */
export function requiredCallNote(required: RequiredCall): string {
  const call = required.name === undefined ? "one of the client's tools" : `the client's tool \`${required.name}\``;
  return `The client requires a tool call now (tool_choice): call ${call} before anything else; an answer without it fails.`;
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

/**
 * The non-streamed writer every API uses: nothing until the end, then the answer as one JSON body
 * (`render`) with the task id header, or the error in the API's shape (`sendError`).
 */
export function jsonWriter(
  res: ServerResponse,
  render: (answer: TurnAnswer, extras: AnswerExtras) => unknown,
  sendError: (res: ServerResponse, error: HttpError, task: TaskHandle | undefined) => void,
): TurnWriter {
  const extras: AnswerExtras = { calls: [] };
  return {
    delta() {
      // The answer is sent whole at the end.
    },
    thinking(text) {
      extras.thinking = (extras.thinking ?? '') + text;
    },
    toolCall(call) {
      extras.calls.push(call);
    },
    finish(answer, task) {
      if (task) res.setHeader(TASK_ID_HEADER, task.id);
      sendJson(res, 200, render(answer, extras));
    },
    fail: (error, task) => sendError(res, error, task),
    close() {},
  };
}
