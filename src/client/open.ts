/**
 * The one "hub or not" decision, for every front-end (README, "One hub"): `openClient`.
 *
 * - A hub runs (the desktop app, `serve`, or an `mcp` that became it): the client reaches it.
 * - None runs: what the front-end asked for (`withoutHub`) —
 *   - `private`: a broker of this process's own, privately (not in a panel or the shared history):
 *     `run`, the gateway;
 *   - `become-hub`: this process starts the hub (broker + control endpoint), when it can take the
 *     data directory, so tasks outlive the front-end's requests and others find them (MCP: a client
 *     comes back for a task's result);
 *   - `history`: the history and the worktrees on disk, read-only for tasks (the task and change
 *     commands, `stats`);
 *   - `refuse`: a one-line refusal (`NO_HUB`) (`run --detach`, `cancel`, `answer`, …).
 * - `local: true` (or options only a broker of one's own can have) skips the hub.
 * - `dataDir` (with `history`) names the data directory first: its hub, or else its history (`stats --data-dir`).
 */
import { TaskBroker, type BrokerOptions } from '../broker/broker.js';
import type { RunRule } from '../broker/run-policy.js';
import { defaultDataDir } from '../paths/data-dir.js';
import { ownerBudgets } from '../hub/task-guards.js';
import { ownerRunPolicy } from '../hub/run-policy.js';
import { ownerAcp } from '../hub/acp-agents.js';
import type { BrokerBridge } from '../hub/broker-bridge.js';
import { BridgeError } from '../model/errors.js';
import { readOwnVersion } from '../version.js';
import { createClient, type BackchannelClient } from './client.js';
import { findHub } from './discover.js';
import { historyTasks } from './history.js';
import { HubTasks } from './hub-tasks.js';
import { localTasks } from './local-tasks.js';
import type { HubClient } from './hub-client.js';
import type { TaskBackend } from './tasks.js';

/** What a front-end does when no hub runs (see the file header). */
export type WithoutHub = 'private' | 'become-hub' | 'history' | 'refuse';

export interface OpenClientOptions {
  withoutHub: WithoutHub;
  /** Run in a broker of this process even when a hub runs (only with `withoutHub: 'private'`). */
  local?: boolean;
  /** The private broker's options, when one is made. */
  broker?: BrokerOptions;
  /** What the private broker's tasks may run beyond the owner's run policy (a gateway's own models). */
  runRules?: readonly RunRule[];
  /** The environment the hub is looked for in. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * `history` only: the data directory this client is for — the hub holding it, or without one its
   * history on disk. @default the default data directory (of `env`)
   */
  dataDir?: string;
  /**
   * `history` only: read a history still held by a broker this process cannot reach (refused
   * otherwise: its running tasks read as interrupted). For figures of finished tasks (`stats`).
   * @default false
   */
  readHeld?: boolean;
}

/** The refusal of a front-end that needs a hub when none runs (`withoutHub: 'refuse'`). */
export const NO_HUB = 'no Backchannel hub is running (start the desktop app or `backchannel serve`); this command needs one';

/** How long `become-hub` waits for a hub that holds the data directory but does not listen yet. */
const LATE_HUB_WAIT_MS = 3000;

const WITHOUT_HUB: Record<WithoutHub, (options: OpenClientOptions) => Promise<TaskBackend>> = {
  private: async (options) => privateBroker(options),
  'become-hub': (options) => becomeHub(options.env),
  history: (options) => historyTasks(options.dataDir ?? defaultDataDir(options.env), { readHeld: options.readHeld }),
  refuse: async () => {
    throw new BridgeError('conflict', NO_HUB);
  },
};

/** The client of the running hub, or what `withoutHub` says when none runs. */
export async function openClient(options: OpenClientOptions): Promise<BackchannelClient> {
  if (options.local && options.withoutHub !== 'private') throw new TypeError('`local` goes with `withoutHub: "private"`');
  if ((options.dataDir !== undefined || options.readHeld) && options.withoutHub !== 'history') {
    throw new TypeError('`dataDir` and `readHeld` go with `withoutHub: "history"`');
  }
  const hub = options.local ? undefined : await findHub(options.env, options.dataDir);
  return createClient(hub ? onHub(hub, options.env, options.dataDir) : await WITHOUT_HUB[options.withoutHub](options));
}

/**
 * A client of a broker this process already has (an embedding app's; the broker stays its owner's). A hub passes its
 * bridge, so the client offers the hub's presets and schedules (MCP over HTTP lists what MCP over stdio lists).
 */
export function clientOf(broker: TaskBroker, hub: { bridge?: BrokerBridge } = {}): BackchannelClient {
  return createClient(localTasks(broker, hub.bridge ? { bridge: hub.bridge } : {}));
}

function onHub(hub: HubClient, env?: NodeJS.ProcessEnv, dataDir?: string): TaskBackend {
  return new HubTasks(hub, () => findHub(env, dataDir));
}

function privateBroker(options: OpenClientOptions): TaskBackend {
  // Not awaiting `ready`: a broker that cannot start fails each task with the reason (the task's own error).
  // The caller's ACP options go over the owner's config (`run` turns the warm adapter off: it runs one task).
  const { acp: acpOptions, ...brokerOptions } = options.broker ?? {};
  const acp = { ...ownerAcp(), ...acpOptions };
  const broker = new TaskBroker({
    runPolicy: ownerRunPolicy({ extra: options.runRules }),
    budgets: ownerBudgets(),
    ...(Object.keys(acp).length > 0 ? { acp } : {}),
    ...brokerOptions,
  });
  return localTasks(broker, { ownsBroker: true });
}

/**
 * A hub of this process (the one assembly, ../hub/assemble.ts: broker, schedules, webhooks, control endpoint; no panel
 * server, no printed URL) — only when it can take the data directory's lock; a directory held by a broker whose hub
 * cannot be reached is refused with its holder's pid (`data_dir_in_use`), never opened twice. Another hub that
 * started meanwhile is used.
 */
async function becomeHub(env?: NodeJS.ProcessEnv): Promise<TaskBackend> {
  const { assembleHub } = await import('../hub/assemble.js');
  try {
    const hub = await assembleHub({ mode: 'headless', version: readOwnVersion(), consoleLevel: false, ...(env ? { env } : {}) });
    return localTasks(hub.broker, { bridge: hub.bridge, close: () => hub.close() });
  } catch (error) {
    const deadline = Date.now() + ((error as { code?: unknown }).code === 'data_dir_in_use' ? LATE_HUB_WAIT_MS : 0);
    for (;;) {
      const late = await findHub(env);
      if (late) return onHub(late, env);
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
