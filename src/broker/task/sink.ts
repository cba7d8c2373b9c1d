/**
 * What an attempt reports, applied to its Task (and to the broker's log): partials, log lines,
 * problems, the process id. `after` lets the broker add its own bookkeeping (journal, questions, tool calls).
 */
import type { AskMessage, BrokerMessage, ToolCallMessage } from '../../protocol/index.js';
import type { Logger } from '../log.js';
import type { AttemptSink } from './attempt.js';
import type { Task } from './task.js';

export interface SinkHooks {
  /** After a partial was recorded. */
  partial(): void;
  ask(message: AskMessage, reply: (message: BrokerMessage) => void): void;
  toolCall(message: ToolCallMessage, reply: (message: BrokerMessage) => void): void;
  /** After the process id was recorded. */
  spawned(pid: number): void;
}

export function attemptSink(task: Task, logger: Logger, hooks: SinkHooks): AttemptSink {
  return {
    partial: (payload) => {
      task.recordPartial(payload);
      hooks.partial();
    },
    log: (stream, text, event) => {
      task.log(stream, text, event);
      if (stream === 'broker') logger.info(`task ${task.id}: ${text}`);
    },
    problem: (kind, detail, facts) => {
      task.recordProblem(kind, detail, facts);
      // Output after the task was decided is expected noise (stdout agents, shutdown); keep it out of warnings.
      if (kind === 'ignored') logger.debug(`task ${task.id}: ${kind}: ${detail}`);
      else logger.warn(`task ${task.id}: ${kind}: ${detail}`);
    },
    ask: (message, reply) => hooks.ask(message, reply),
    toolCall: (message, reply) => hooks.toolCall(message, reply),
    placed: (worker) => task.placed(worker),
    spawned: (pid) => {
      task.spawned(pid);
      hooks.spawned(pid);
    },
  };
}
