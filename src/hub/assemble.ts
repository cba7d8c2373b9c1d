/**
 * The hub, assembled once, for every shell: the data directory's lock, the presets and the run policy, the broker and
 * the webhooks, the scheduler, the bridge, the control endpoint (advertised in the lock) and the HTTP mounts the shell
 * serves (MCP over HTTP). `serve` (./headless/start.ts) adds the panel server; the desktop app (src/desktop/app-hub.ts) its
 * mount server, IPC and the tray; `openClient`'s `become-hub` (src/client/open.ts) nothing. A notification channel, a
 * mount or a hub option is one edit here.
 *
 * A step that fails undoes the ones before it, last first; `close()` undoes them all the same way.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { TaskBroker, type BrokerOptions } from '../broker/broker.js';
import { createHeadlessLogger, type Logger } from '../broker/log.js';
import { ensureDataDir } from '../broker/history/data-dir.js';
import { lockDataDir, type DataDirLock } from '../broker/history/data-dir-lock.js';
import type { RunPolicy } from '../broker/run-policy.js';
import type { BridgeInfo, PresetInfo } from '../bridge/contract.js';
import { loadConfig } from '../config/file.js';
import { redisFireClaims, redisQueue, type RedisQueueOptions } from '../fleet/index.js';
import { Notifications, openNotifications } from '../notify/index.js';
import { defaultDataDir } from '../paths/data-dir.js';
import { controlSocketPath } from '../paths/control-endpoint.js';
import { defaultDemoAgentsDir, loadPresets } from '../templates/presets.js';
import { createBrokerBridge, type BrokerBridge } from './broker-bridge.js';
import { startControlServer, type ControlServer } from './control/server.js';
import type { HttpMount } from './http/mounts.js';
import { ownerRunPolicy } from './run-policy.js';
import { acpAgentPresets } from './acp-agents.js';
import { startSchedules, type HubScheduler } from './scheduler.js';
import { ownerTaskGuards } from './task-guards.js';

export interface HubOptions {
  /** `headless` (serve, become-hub) or `electron` (the desktop app): what the panel's info says. */
  mode: BridgeInfo['mode'];
  version: string;
  /** History and logs. @default $XDG_STATE_HOME/backchannel or ~/.local/state/backchannel */
  dataDir?: string;
  /** The shell's logger and its file. @default a log in `<dataDir>/logs`, and `consoleLevel` on the console */
  log?: { logger: Logger; logPath: string };
  /** Console log level of the default logger. @default 'warn' */
  consoleLevel?: 'error' | 'warn' | 'info' | 'debug' | false;
  /** Whose demo agents (its demo-agents.json) the presets offer first. @default scripts/demo-agents */
  demoAgentsDir?: string;
  /** Sub-agent templates (the packaged app's extra resource). @default templates/ in the checkout */
  templatesDir?: string;
  concurrency?: number;
  /** Finished tasks kept in history. @default the broker's (1,000) */
  historyLimit?: number;
  /** Endpoint directory for the task sockets (tests use a private one). */
  ipcDir?: string;
  /** Run tasks on a worker fleet through this Redis queue instead of locally (docs/scale-out.md). */
  redis?: RedisQueueOptions;
  /** Broker options set by `serve`'s flags: the sub-agents' environment policy, strict tokens. */
  broker?: Pick<BrokerOptions, 'env' | 'requireToken' | 'agentCpu'>;
  /** What other doors than `backchannel run` may start. @default the owner's (./run-policy.ts): presets and the config file's */
  runPolicy?: RunPolicy;
  /** Fire the schedules kept in `<dataDir>/schedules` (docs/schedules.md). @default true */
  schedules?: boolean;
  /**
   * The control endpoint's socket path, or false for none. @default controlSocketPath(): in `dataDir` when one is
   * given, else the per-user well-known path. Another hub listening there is an error.
   */
  control?: string | false;
  /** How the panel's "Open log" opens the log (the desktop app's). */
  openLog?: (path: string) => Promise<void>;
  /** Endpoints of other parts the shell serves over HTTP (MCP over HTTP), made once the bridge exists. */
  mounts?: (hub: HubCore) => readonly HttpMount[];
  /**
   * The desktop app's: webhooks, schedules or a control endpoint that cannot start are logged in one line and the hub
   * runs without them (a dialog at every start would be worse than a line in the log the tray opens). @default false:
   * the start fails with the reason
   */
  lenient?: boolean;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** What a mount is made from. */
export interface HubCore {
  readonly broker: TaskBroker;
  readonly bridge: BrokerBridge;
}

export interface Hub extends HubCore {
  readonly dataDir: string;
  readonly logger: Logger;
  readonly logPath: string;
  readonly presets: readonly PresetInfo[];
  /** The schedules' scheduler, unless `schedules: false` (or, `lenient`, it could not start). */
  readonly scheduler: HubScheduler | undefined;
  /** The control endpoint, unless `control: false` (or, `lenient`, it could not start). */
  readonly control: ControlServer | undefined;
  /** The one notification decision, fed here; the config's channels (webhooks) are subscribed, the app subscribes its own. */
  readonly notifications: Notifications;
  /** For the shell's server, which closes them. */
  readonly mounts: readonly HttpMount[];
  /** Stops the schedules, closes the control endpoint and the bridge, cancels running tasks and closes the broker. */
  close(): Promise<void>;
}

/** What undoes a step, last first. */
type Undo = () => unknown;

/** The hub over `options.dataDir`; throws (with every step taken undone) when it cannot start. */
export async function assembleHub(options: HubOptions): Promise<Hub> {
  const env = options.env ?? process.env;
  const dataDir = options.dataDir ?? defaultDataDir(env);
  // One broker per data directory, taken before anything here touches it (log, history): a second hub on it says who
  // holds it and stops, and never writes there.
  const lock = await lockDataDir(dataDir);
  const core = await openBroker(dataDir, lock, options);
  const undo: Undo[] = [() => core.broker.close()];
  try {
    return await assembleOver(core, lock, options, undo);
  } catch (error) {
    await unwind(undo, core.logger);
    throw error;
  }
}

/** Undoes the steps taken, last first; a step that fails is logged and the others still run. */
async function unwind(undo: Undo[], logger: Logger): Promise<void> {
  for (let step = undo.pop(); step; step = undo.pop()) {
    try {
      await step();
    } catch (error) {
      logger.error('closing the hub:', error);
    }
  }
}

interface OpenedBroker {
  readonly dataDir: string;
  readonly broker: TaskBroker;
  readonly logger: Logger;
  readonly logPath: string;
  readonly presets: PresetInfo[];
  readonly runPolicy: RunPolicy;
}

/** The log, the presets and the run policy, then the broker, which takes the lock over; the lock is released when a step fails. */
async function openBroker(dataDir: string, lock: DataDirLock, options: HubOptions): Promise<OpenedBroker> {
  try {
    const { logger, logPath } = options.log ?? headlessLog(dataDir, options.consoleLevel);
    const queue = options.redis ? redisQueue(options.redis) : undefined;
    const warn = (message: string): void => logger.warn(message);
    // The owner's named ACP agents are presets too (./acp-agents.ts).
    const presets = [
      ...loadPresets(options.demoAgentsDir ?? defaultDemoAgentsDir(), warn, options.templatesDir),
      ...acpAgentPresets(loadConfig(options.env)),
    ];
    const runPolicy = options.runPolicy ?? ownerRunPolicy({ presets });
    lock.handOver();
    const broker = new TaskBroker({
      ...options.broker,
      dataDir,
      logger,
      concurrency: options.concurrency,
      historyLimit: options.historyLimit,
      ipcDir: options.ipcDir,
      queue,
      runPolicy,
      ...ownerTaskGuards(),
    });
    broker.on('warning', warn);
    return { dataDir, broker, logger, logPath, presets, runPolicy };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

/** A log file in `<dataDir>/logs`, with the journal's rules: a directory of our own, and no symlink in place of the file. */
function headlessLog(dataDir: string, consoleLevel: HubOptions['consoleLevel']): { logger: Logger; logPath: string } {
  ensureDataDir(join(dataDir, 'logs'), 'Log directory');
  const logPath = join(dataDir, 'logs', 'backchannel.log');
  if (lstatSync(logPath, { throwIfNoEntry: false })?.isSymbolicLink()) {
    throw new Error(`${logPath} is a symlink; remove it (logs are never written through one)`);
  }
  return { logger: createHeadlessLogger({ file: logPath, console: consoleLevel ?? 'warn' }), logPath };
}

/** The steps after the broker, each pushing its undo. */
async function assembleOver(core: OpenedBroker, lock: DataDirLock, options: HubOptions, undo: Undo[]): Promise<Hub> {
  const { broker, logger, logPath, dataDir } = core;
  await broker.ready;
  const optional = optionalStep(options.lenient === true, logger);
  // The notifications, fed once here, with the config's channels (webhooks: signed, retried in the background, never in
  // the broker's way); a lenient hub whose `notify:` section is wrong notifies its own subscribers still.
  const notifications =
    optional('no webhooks', () => openNotifications(broker, loadConfig(options.env), logger)) ?? new Notifications(broker, logger);
  undo.push(() => notifications.close());
  // Schedules fire once the broker has recovered its history: a miss while the hub was down is caught up now.
  const scheduler =
    options.schedules === false ? undefined : optional('schedules do not fire', () => schedulerOf(core, options, notifications, undo));
  const bridge = createBrokerBridge(broker, {
    mode: options.mode,
    version: options.version,
    logPath,
    presets: core.presets,
    ...(options.openLog ? { openLog: options.openLog } : {}),
    onListenerError: (error) => logger.error('panel event listener failed', error),
    ...(scheduler ? { scheduler } : {}),
  });
  undo.push(() => bridge.close());
  let mounts: readonly HttpMount[] = [];
  const control = await startControl({ bridge, lock, logger, options, optional, undo, mounts: () => mounts });
  mounts = options.mounts?.({ broker, bridge }) ?? [];
  let closing: Promise<void> | undefined;
  return {
    dataDir,
    broker,
    bridge,
    logger,
    logPath,
    presets: core.presets,
    scheduler,
    control,
    notifications,
    mounts,
    close() {
      // No fire starts a task while the rest closes.
      scheduler?.stop();
      closing ??= unwind(undo, logger);
      return closing;
    },
  };
}

/** Runs a step that a lenient hub may run without: its failure is then logged in one line (`what: reason`). */
type OptionalStep = <T>(what: string, step: () => T) => T | undefined;

function optionalStep(lenient: boolean, logger: Logger): OptionalStep {
  return (what, step) => {
    if (!lenient) return step();
    try {
      return step();
    } catch (error) {
      logger.error(`${what}: ${(error as Error).message}`);
      return undefined;
    }
  };
}

/** The schedules' scheduler; on a fleet, hubs sharing a schedule claim each fire through the fleet's Redis (docs/schedules.md). */
function schedulerOf(core: OpenedBroker, options: HubOptions, notifications: Notifications, undo: Undo[]): HubScheduler {
  const { broker, logger, runPolicy } = core;
  const { redis } = options;
  const claims = redis ? redisFireClaims({ redis: redis.redis, name: redis.name, tls: redis.tls }) : undefined;
  if (claims) undo.push(() => claims.close());
  const scheduler = startSchedules(core.dataDir, {
    submit: (spec) => broker.submit(spec),
    runPolicy,
    logger,
    usageOf: (id) => broker.get(id)?.usage,
    claims,
    onSkipped: (record) => notifications.scheduleSkipped({ ...record, reason: record.reason! }),
  });
  undo.push(() => scheduler.stop());
  return scheduler;
}

interface ControlStep {
  bridge: BrokerBridge;
  lock: DataDirLock;
  logger: Logger;
  options: HubOptions;
  optional: OptionalStep;
  undo: Undo[];
  /** The hub's HTTP mounts, served on the control socket too (X13). */
  mounts: () => readonly HttpMount[];
}

/** The control endpoint, advertised in the data directory's lock: who finds the directory held learns where this hub listens. */
async function startControl(step: ControlStep): Promise<ControlServer | undefined> {
  const { options, logger } = step;
  if (options.control === false) return undefined;
  const path = options.control ?? controlSocketPath(options.env ?? process.env, options.dataDir);
  let control: ControlServer | undefined;
  try {
    control = await startControlServer({ bridge: step.bridge, path, logger, mounts: step.mounts });
  } catch (error) {
    if (!options.lenient) throw error;
    logger.warn(`no control endpoint: ${(error as Error).message}`);
    return undefined;
  }
  const server = control;
  step.undo.push(() => server.close());
  step.lock.advertise({ control: server.path });
  return server;
}
