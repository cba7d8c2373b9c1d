/**
 * The history on disk, read-only, for the task commands while no hub runs (`backchannel tasks`,
 * `show`, `logs`, `wait`, `stats`; its schedules too): the journal and the insights rollup are read once and nothing else is
 * done — no broker, no lock, no socket sweep, no spool adoption, no journal rewrite. A second broker
 * opened only to read did all of those, to a history that was not its own.
 *
 * The picture is the one the next hub would show: a task the journal leaves unfinished was running
 * when its broker stopped, so it reads `interrupted` (the next hub may still recover its result).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BridgeError } from '../model/errors.js';
import { Journal } from '../broker/history/journal.js';
import { ResultStore } from '../broker/history/results.js';
import { readInsights, Rollup } from '../broker/history/rollup.js';
import { silentLogger } from '../base/log.js';
import type { TaskSnapshot } from '../model/task.js';
import { createBrokerBridge, type BrokerBridge, type BrokerLike, type SchedulerLike } from '../hub/broker-bridge.js';
import { ScheduleStore } from '../schedules/store.js';
import { readOwnVersion } from '../version.js';
import { Worktrees } from '../broker/worktree/worktrees.js';
import { readLockHolder } from '../broker/history/data-dir-lock.js';
import { CONTROL_ENV } from '../paths/control-endpoint.js';
import { isActive } from '../model/states.js';
import { FedTask } from './fed-task.js';
import { defaultWorktreeDir, registryChanges } from './changes.js';
import type { TaskBackend } from './tasks.js';

export const READ_ONLY =
  'no Backchannel hub is running: the history on disk can be read, not changed (start the desktop app or `backchannel serve`)';

/** A broker's read side over the history in `dir`; every change is refused. */
function historyView(dir: string): BrokerLike {
  const rollup = new Rollup();
  rollup.load(dir);
  const { entries } = new Journal(dir, silentLogger).load();
  // Tasks the rollup already counts left history; the next start drops them from the journal.
  const tasks = entries
    .map((entry) => entry.snapshot)
    .filter((task) => !rollup.counts(task.id))
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  const byId = new Map(tasks.map((task) => [task.id, task]));
  // A big result is kept whole in <dir>/results/<id>.json; reading it changes nothing.
  const results = new ResultStore(dir, () => {});
  const refuse = (): never => {
    throw new BridgeError('conflict', READ_ONLY);
  };
  return {
    tasks: (): TaskSnapshot[] => tasks.map((task) => structuredClone(task)),
    get: (id) => {
      const task = byId.get(id);
      return task && structuredClone(task);
    },
    logOf: () => [],
    result: (id) => {
      const task = byId.get(id);
      return task?.resultSummary ? results.read(id) : task?.result;
    },
    insights: (query) => readInsights(dir, query),
    submit: refuse,
    retry: refuse,
    cancel: refuse,
    answer: refuse,
    answerToolCall: refuse,
    pause: refuse,
    resume: refuse,
    paused: false,
    on: () => () => {},
  };
}

/**
 * The schedules kept in `dir`, read-only: their records and fire history (what `stats` counts); none
 * fires here, so none has a next fire or an active run, and every change is refused. A directory
 * without schedules gets no `schedules/` directory from it.
 */
function historySchedules(dir: string): SchedulerLike {
  let store: ScheduleStore | undefined;
  const opened = (): ScheduleStore | undefined => (store ??= existsSync(path.join(dir, 'schedules')) ? new ScheduleStore(dir) : undefined);
  const refuse = (): never => {
    throw new BridgeError('conflict', READ_ONLY);
  };
  return {
    list: () => opened()?.list() ?? [],
    get: (name) => opened()?.get(name),
    history: (name) => opened()?.history(name) ?? [],
    nextFireAt: () => undefined,
    activeRuns: () => 0,
    add: refuse,
    remove: refuse,
    setPaused: refuse,
    runNow: refuse,
  };
}

/** The history in `dir` as a bridge that reads and never writes. */
export function readOnlyHistory(dir: string): BrokerBridge {
  return createBrokerBridge(historyView(dir), {
    mode: 'headless',
    version: readOwnVersion(),
    logPath: '',
    scheduler: historySchedules(dir),
  });
}

/**
 * The history in `dataDir` as a client's backend while no hub runs: its calls read the history,
 * a task's handle is its last picture (settled when it had finished), and the changes are the
 * worktree registry on disk that tasks run without a hub used. A history whose broker still holds
 * it is refused, unless `readHeld` (figures only: its running tasks read as interrupted).
 */
export async function historyTasks(dataDir: string, options: { readHeld?: boolean } = {}): Promise<TaskBackend> {
  const holder = options.readHeld ? undefined : await readLockHolder(dataDir);
  if (holder) {
    // Its running tasks would read as interrupted.
    const pid = holder.pid === undefined ? 'pid unknown' : `pid ${holder.pid}`;
    throw new BridgeError(
      'conflict',
      `the history in ${dataDir} belongs to a running Backchannel broker (${pid}) whose hub this process cannot reach; use that process, or set ${CONTROL_ENV} to its control endpoint`,
    );
  }
  const bridge = readOnlyHistory(dataDir);
  const refuse = async (): Promise<never> => {
    throw new BridgeError('conflict', READ_ONLY);
  };
  return {
    where: { kind: 'history', dataDir },
    keepsWorktrees: false,
    bridge,
    run: refuse,
    start: refuse,
    async follow(id) {
      const { task } = await bridge.getTask(id);
      const run = new FedTask(
        { cancel: refuse, answer: refuse, answerToolCall: refuse, annotate: refuse, result: (taskId) => bridge.taskResult(taskId) },
        id,
      );
      run.receive({ task });
      run.end();
      return run;
    },
    counts: async () => {
      const active = (await bridge.listTasks()).filter((task) => isActive(task.state) || task.state === 'queued');
      return {
        running: active.filter((task) => task.state !== 'queued').length,
        queued: active.filter((t) => t.state === 'queued').length,
      };
    },
    changes: registryChanges(new Worktrees(defaultWorktreeDir(dataDir))),
    close: async () => bridge.close(),
  };
}
