/**
 * A bridged turn (docs/gateway.md, "Bridge mode"), beside the bridged run (./bridged-run.ts) it
 * drives: a new run of the agent with the client's tools, in a private scratch directory, anchored
 * on the client's environment; and a request whose tool results continue a suspended run, when that
 * is safe, or retire it to be replayed.
 */
import { randomUUID } from 'node:crypto';
import { describeFailure, type CancelWhy } from './request-task/index.js';
import { buildPrompt, InvalidRequest, type ChatMessage, type Turn } from './request.js';
import { taskSpecFor } from './routes.js';
import { transcriptHash, type Session } from './sessions.js';
import { isSideRequest } from './side-requests.js';
import type { RoutedTurn, TurnContext, TurnOutcome } from './turn-context.js';
import { httpErrorFor, missingCall } from './turn-errors.js';
import { HttpError } from './http.js';
import { NO_RETRY } from './turn-dedupe.js';
import { newTurn, prepareMessages } from './turn-messages.js';
import type { TurnWriter } from './writer.js';
import { hostEnvOf, writeRules } from './bridge/anchor.js';
import type { GuardCounts } from './bridge/guard.js';
import { BridgedRun, type BridgedRunOptions } from './bridged-run.js';
import type { ToolResultIn } from './bridge/wire.js';
import { resumable } from './acp-model.js';

/**
 * A bridged turn: a new run of the agent with the client's tools, written to this request until its
 * first step of tool calls (or its answer). The run holds its session until it ends. The agent runs
 * in a private scratch directory, never in `workspace` or the model's `cwd` (which may be the very
 * project the client works in): its session's, or the run's own, deleted when the run ends.
 */
export async function runBridgedTurn(context: TurnContext, routed: RoutedTurn, outcome: TurnOutcome): Promise<void> {
  const { config, workspaces } = context.options;
  const { turn, session, abort } = routed;
  const resume = resumable(routed.route) ? session?.agentSession : undefined;
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
      tags: { api: routed.api.name, mode: 'bridge', ...(session ? { session: session.key } : {}) },
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
      idPrefix: routed.api.callIdPrefix,
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
        if (result.unanswered) rememberExpired(context, result.unanswered);
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

/** Client call ids of runs ended while waiting on them, kept at most (the oldest go first). */
export const MAX_EXPIRED_CALLS = 1024;

/** The calls a run waited on when it was ended: the client's late results for them get `error`, once. */
function rememberExpired(context: TurnContext, { ids, error }: { ids: string[]; error: HttpError }): void {
  const late = new HttpError(
    504,
    `The tool results this request sends came too late, and it was not run: ${error.message}\n` +
      'Send it again to replay the whole conversation to a new sub-agent.',
    'timeout',
    'tool_results_too_late',
    null,
    NO_RETRY,
  );
  for (const id of ids) context.expiredCalls.set(id, late);
  for (const id of context.expiredCalls.keys()) {
    if (context.expiredCalls.size <= MAX_EXPIRED_CALLS) break;
    context.expiredCalls.delete(id);
  }
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
export async function continueBridged(
  context: TurnContext,
  turn: Turn,
  { model, purpose, abort, writer }: { model: string; purpose: 'main' | 'side'; abort: AbortController; writer: TurnWriter },
): Promise<boolean> {
  checkResultIds(turn.messages);
  const { results, steering, prefix } = trailingResults(turn.messages);
  if (results.length === 0) return false;
  const run = [...context.bridges.keys()].find((r) => results.some((result) => r.pending.has(result.id)));
  if (!run) return refuseExpired(context, results);
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

/**
 * Late results for calls of a run ended while waiting on them (Y4): the request gets that run's end
 * as the API's error, once (its calls are forgotten, so sending it again replays it). False otherwise.
 */
function refuseExpired(context: TurnContext, results: readonly ToolResultIn[]): false {
  const late = results.map((result) => context.expiredCalls.get(result.id)).find((error) => error !== undefined);
  if (!late) return false;
  for (const result of results) context.expiredCalls.delete(result.id);
  throw late;
}

/** Retires a run another turn replaces: its agent session is not resumed (the replay carries the whole transcript). */
export async function retire(run: { retire(): Promise<void> }, session: Session | undefined): Promise<void> {
  await run.retire();
  if (session) session.agentSession = undefined;
}
