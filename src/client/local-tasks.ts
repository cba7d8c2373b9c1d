/** The in-process backend (./tasks.ts): a broker in this process, its calls through the same bridge the hub serves. */
import type { TaskBroker } from '../broker/broker.js';
import { BridgeError } from '../model/errors.js';
import { isFinished, type TaskSnapshot, type TaskUpdate, type ToolAnswer } from '../model/task.js';
import { createBrokerBridge, noToolCall, notAnnotatable, type BrokerBridge } from '../hub/broker-bridge.js';
import { ANNOTATIONS, checkWith, TOOL_ANSWER } from '../bridge/checks.js';
import { readOwnVersion } from '../version.js';
import { FedTask } from './fed-task.js';
import type { TaskBackend } from './tasks.js';
import { registryChanges } from './changes.js';

export interface LocalTasksOptions {
  /** `close()` closes the broker too (it was opened for this client). @default false */
  ownsBroker?: boolean;
  /** The broker's bridge when this process serves one already (a hub of its own, with its presets). */
  bridge?: BrokerBridge;
  /** What `close()` does instead (a hub of its own closes its endpoint, then its broker). */
  close?: () => Promise<void>;
}

/** A broker in this process as a client's backend. */
export function localTasks(broker: TaskBroker, options: LocalTasksOptions = {}): TaskBackend {
  const answer = async (id: string, askId: string, text: string, via?: string): Promise<void> => {
    if (!broker.answer(id, askId, text, via)) throw new BridgeError('conflict', `Task ${id} is not waiting for an answer to "${askId}"`);
  };
  const answerToolCall = async (id: string, callId: string, toolAnswer: ToolAnswer): Promise<void> => {
    if (!broker.get(id)) throw new BridgeError('not_found', `No task with id ${id}`);
    if (!broker.answerToolCall(id, callId, checkWith(TOOL_ANSWER, toolAnswer, 'answer'))) {
      throw new BridgeError('conflict', noToolCall(id, callId));
    }
  };
  const annotate = async (id: string, meta: Record<string, unknown>): Promise<void> => {
    const task = broker.get(id);
    if (!task) throw new BridgeError('not_found', `No task with id ${id}`);
    if (!broker.annotate(id, checkWith(ANNOTATIONS, meta, 'meta'))) throw new BridgeError('conflict', notAnnotatable(id, task.state));
  };
  // Made on first use: a `run` that only starts and follows its own task needs no all-task stream.
  let bridge: BrokerBridge | undefined = options.bridge;
  const bridgeOf = (): BrokerBridge =>
    (bridge ??= createBrokerBridge(broker, { mode: 'headless', version: readOwnVersion(), logPath: '' }));
  return {
    where: { kind: 'local' },
    keepsWorktrees: broker.coding.worktrees !== undefined,
    get bridge() {
      return bridgeOf();
    },
    async run(spec) {
      const handle = broker.submit(spec);
      return {
        ...handle,
        answer: (askId, text, via) => answer(handle.id, askId, text, via),
        answerToolCall: (callId, toolAnswer) => answerToolCall(handle.id, callId, toolAnswer),
        annotate: (meta) => annotate(handle.id, meta),
        stop: () => {},
      };
    },
    async start(spec) {
      const handle = broker.submit(spec);
      // The outcome reaches its followers through updates; an unobserved rejection must not crash this process.
      handle.result.catch(() => {});
      return { id: handle.id };
    },
    async follow(id) {
      const snapshot = broker.get(id);
      if (!snapshot) throw new BridgeError('not_found', `No task with id ${id}`);
      const task = new FedTask(
        { cancel: async (taskId, reason) => void broker.cancel(taskId, reason), answer, answerToolCall, annotate },
        id,
      );
      // Each update carries its task's picture (as in the hub's task feed): the broker is not read back per update.
      const onUpdate = (update: TaskUpdate, picture: () => TaskSnapshot | undefined): void => {
        if (update.taskId !== id) return;
        const now = picture();
        if (now) task.receive({ task: now, update });
        if (update.kind === 'exited') broker.off('update', onUpdate);
      };
      task.receive({ task: snapshot });
      task.feedBy(() => broker.off('update', onUpdate));
      if (isFinished(snapshot.state)) task.end();
      else broker.on('update', onUpdate);
      return task;
    },
    counts: async () => {
      const { running, queued } = broker.stats();
      return { running, queued };
    },
    changes: broker.coding.worktrees ? registryChanges(broker.coding) : noChanges(),
    close: async () => {
      if (options.close) return options.close();
      bridge?.close();
      if (options.ownsBroker) await broker.close();
    },
  };
}

/** A broker without a place for worktrees has no changes: every call says so. */
function noChanges(): TaskBackend['changes'] {
  const refuse = async (): Promise<never> => {
    throw new BridgeError('not_found', 'This broker keeps no worktrees');
  };
  return { change: refuse, apply: refuse, discard: refuse, keepBranch: refuse, list: async () => [], resolve: refuse };
}
