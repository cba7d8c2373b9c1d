/** Checks a submitted task spec before anything is registered; throws a BrokerError naming the field. */
import { BrokerError } from '../errors.js';
import { checkDuration } from '../guards/duration.js';
import type { TaskSpec } from '../../model/task.js';
import { firstProblem } from '../../model/shapes.js';
import { TOOL_DEFINITIONS } from '../../model/tools.js';
import * as z from 'zod/mini';
import { wellFormed } from '../../model/well-formed.js';

export function validateSpec(spec: TaskSpec): void {
  if (typeof spec !== 'object' || spec === null) throw new BrokerError('invalid_option', 'Expected a task spec object.');
  if (typeof spec.command !== 'string' || spec.command.trim() === '') {
    throw new BrokerError('invalid_option', 'Expected `command` to be a non-empty string (the executable, without a shell).');
  }
  if (spec.args !== undefined && !(Array.isArray(spec.args) && spec.args.every((a) => typeof a === 'string'))) {
    throw new BrokerError('invalid_option', 'Expected `args` to be an array of strings.');
  }
  checkDuration('timeoutMs', spec.timeoutMs);
  checkDuration('heartbeatTimeoutMs', spec.heartbeatTimeoutMs);
  checkDuration('askTimeoutMs', spec.askTimeoutMs);
  checkWorktree(spec.worktree);
  if (spec.tools !== undefined) {
    // A library caller's spec is not a checked request: its tools get the request's one check.
    const parsed = z.safeParse(TOOL_DEFINITIONS, spec.tools);
    if (!parsed.success) throw new BrokerError('invalid_option', firstProblem(parsed.error, 'tools'));
  }
  if (spec.parent !== undefined && (typeof spec.parent !== 'string' || spec.parent === '')) {
    throw new BrokerError('invalid_option', 'Expected `parent` to be a task id.');
  }
  const tokens = spec.estimatedTokens;
  if (tokens !== undefined && (typeof tokens !== 'number' || !Number.isFinite(tokens) || tokens < 0)) {
    throw new BrokerError('invalid_option', `Expected \`estimatedTokens\` to be a non-negative finite number, got \`${String(tokens)}\``);
  }
}

/** The label shown for a task: its own, or the command line; a lone surrogate in it is U+FFFD (Y51). */
export function labelOf(spec: TaskSpec): string {
  return wellFormed(spec.label ?? [spec.command, ...(spec.args ?? [])].join(' '));
}

/** Cancels (with the abort reason) when `signal` aborts; stops listening once `settled` settles. */
export function cancelOnAbort(signal: AbortSignal, settled: Promise<unknown>, cancel: (reason: string) => void): void {
  const onAbort = () => cancel(abortReason(signal));
  if (signal.aborted) return onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  // A long-lived signal shared by many tasks must not collect one listener per finished task.
  const detach = () => signal.removeEventListener('abort', onAbort);
  settled.then(detach, detach);
}

/** The caller's abort reason as text (`controller.abort('user closed the tab')`), or a default. */
export function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (typeof reason === 'string' && reason) return reason;
  if (reason instanceof Error && reason.name !== 'AbortError' && reason.message) return reason.message;
  return 'aborted by the caller';
}

function checkWorktree(worktree: TaskSpec['worktree']): void {
  if (worktree === undefined || typeof worktree === 'boolean') return;
  const refuse = (what: string): never => {
    throw new BrokerError('invalid_option', `Expected \`worktree${what}`);
  };
  if (typeof worktree !== 'object' || worktree === null || Array.isArray(worktree))
    refuse('` to be true or {base?, includeUncommitted?, reuse?}.');
  for (const key of Object.keys(worktree)) if (!['base', 'includeUncommitted', 'reuse'].includes(key)) refuse(`\` to have no \`${key}\`.`);
  if (worktree.base !== undefined && (typeof worktree.base !== 'string' || worktree.base === '')) refuse('.base` to be a git revision.');
  if (worktree.includeUncommitted !== undefined && typeof worktree.includeUncommitted !== 'boolean')
    refuse('.includeUncommitted` to be a boolean.');
  if (worktree.reuse !== undefined && (typeof worktree.reuse !== 'string' || worktree.reuse === '')) refuse('.reuse` to be a task id.');
}
