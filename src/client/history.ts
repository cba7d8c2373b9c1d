/**
 * The history on disk, read-only, for the task commands while no hub runs (`backchannel tasks`,
 * `show`, `logs`, `wait`): the journal and the insights rollup are read once and nothing else is
 * done — no broker, no lock, no socket sweep, no spool adoption, no journal rewrite. A second broker
 * opened only to read did all of those, to a history that was not its own.
 *
 * The picture is the one the next hub would show: a task the journal leaves unfinished was running
 * when its broker stopped, so it reads `interrupted` (the next hub may still recover its result).
 */
import { BridgeError } from '../bridge/calls.js';
import { Journal } from '../broker/history/journal.js';
import { ResultStore } from '../broker/history/results.js';
import { readInsights, Rollup } from '../broker/history/rollup.js';
import { silentLogger } from '../broker/log.js';
import type { TaskSnapshot } from '../model/task.js';
import { createBrokerBridge, type BrokerBridge, type BrokerLike } from '../hub/broker-bridge.js';
import { readOwnVersion } from '../version.js';

const READ_ONLY =
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
    pause: refuse,
    resume: refuse,
    paused: false,
    on: () => () => {},
  };
}

/** The history in `dir` as a bridge that reads and never writes. */
export function readOnlyHistory(dir: string): BrokerBridge {
  return createBrokerBridge(historyView(dir), { mode: 'headless', version: readOwnVersion(), logPath: '' });
}
