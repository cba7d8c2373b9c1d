/**
 * What went wrong with a request's task, in words a person can act on, sorted into the few kinds a
 * front-end maps to its own status codes (the gateway: 504, 503, 403, 500).
 */
import { BridgeError, BrokerError, isHubLost, TaskError } from '../../client/index.js';
import { isStopReason } from '../../model/states.js';
import type { FailureReason } from '../../model/task.js';
import type { CancelWhy } from './runner.js';

/** Lines of a failed agent's stderr quoted in the message. */
const STDERR_LINES_IN_ERRORS = 5;
/** The most of a stopped agent's text a message quotes: a whole answer, as a rule, never a flood. */
const KEPT_CHARS_IN_ERRORS = 64 * 1024;

export type TaskFailure =
  | { kind: 'timeout'; message: string }
  | { kind: 'unavailable'; message: string }
  | { kind: 'internal'; message: string }
  /** The run policy of whoever runs the tasks did not admit it: nothing ran. */
  | { kind: 'refused'; message: string }
  | { kind: 'agent'; reason: FailureReason; message: string };

export interface DescribeFailureContext {
  /** Why the request was aborted, if it was. */
  why: CancelWhy | undefined;
  /** The request deadline, for the timeout message. */
  timeoutMs: number;
  /** Who is speaking: "The gateway is shutting down". @default 'server' */
  name?: string;
  /** The text the request's answer had so far (its streamed deltas): kept in the message of a stopped task. */
  produced?: string;
}

/**
 * What a task stopped by its deadline, its budget or a cancel had written (docs/reliability.md: finished
 * work is never thrown away): the answer streamed so far, else its partial result's text; '' when it
 * failed by itself (it said what it meant to) or had written nothing.
 */
export function stoppedText(error: unknown, produced = ''): string {
  if (!TaskError.is(error) || !isStopReason(error.reason)) return '';
  const data = error.partialResult?.data as { text?: unknown } | string | undefined;
  const fromPartial = typeof data === 'string' ? data : typeof data?.text === 'string' ? data.text : '';
  return produced || fromPartial;
}

/** `stoppedText` as the failure message's last line. */
function keptText(error: unknown, produced: string | undefined): string {
  const text = stoppedText(error, produced);
  if (!text) return '';
  const cut = text.length > KEPT_CHARS_IN_ERRORS ? `${text.slice(0, KEPT_CHARS_IN_ERRORS)}… (${text.length} characters)` : text;
  return `\nWhat it had written before it was stopped: ${cut}`;
}

export function describeFailure(error: unknown, context: DescribeFailureContext): TaskFailure {
  const name = context.name ?? 'server';
  if (context.why === 'tool_results') {
    const kept = keptText(error, context.produced);
    return {
      kind: 'timeout',
      message: `The sub-agent waited for the client's tool results longer than the request timeout (${context.timeoutMs} ms); its task was cancelled.${kept}`,
    };
  }
  if (context.why === 'timeout' || (TaskError.is(error) && error.reason === 'timeout')) {
    const kept = keptText(error, context.produced);
    return { kind: 'timeout', message: `The sub-agent did not answer within ${context.timeoutMs} ms; its task was cancelled.${kept}` };
  }
  if (context.why === 'shutdown' || (error instanceof BrokerError && error.code === 'closed')) {
    return { kind: 'unavailable', message: `The ${name} is shutting down; the request was cancelled.` };
  }
  if (isHubLost(error)) {
    return { kind: 'unavailable', message: `The ${name} could not run the sub-agent: ${error.message}.` };
  }
  if ((BridgeError.is(error) || error instanceof BrokerError) && error.code === 'refused') {
    return { kind: 'refused', message: error.message };
  }
  if (!TaskError.is(error)) {
    return { kind: 'internal', message: `The ${name} could not run the sub-agent: ${(error as Error).message}` };
  }
  // The agent's own words (whole, from its payload), else the failure's without the broker's framing.
  const data = error.payload?.data as { message?: unknown } | undefined;
  const own = typeof data?.message === 'string' ? data.message : (error.detail ?? error.taskMessage);
  const tail =
    error.stderrTail && !own.includes(error.stderrTail) ? error.stderrTail.split('\n').slice(-STDERR_LINES_IN_ERRORS).join('\n') : '';
  return {
    kind: 'agent',
    reason: error.reason,
    message: `The sub-agent failed (${error.reason}): ${own}${tail ? `\nstderr: ${tail}` : ''}${keptText(error, context.produced)}`,
  };
}
