/**
 * Headless mode in one call: a broker with history in `dataDir`, the bridge over it, and the panel
 * server. Used by `backchannel serve` and `npm start` where Electron is not installed.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { TaskBroker, type BrokerOptions } from '../../broker/broker.js';
import { createHeadlessLogger, type Logger } from '../../broker/log.js';
import { ensureDataDir } from '../../broker/history/data-dir.js';
import { lockDataDir, type DataDirLock } from '../../broker/history/data-dir-lock.js';
import { readOwnVersion } from '../../version.js';
import { createBrokerBridge, type BrokerBridge } from '../broker-bridge.js';
import { defaultDemoAgentsDir, loadPresets } from '../../templates/presets.js';
import { startPanelServer, type PanelServer } from './server.js';
import type { HttpMount } from '../http/mounts.js';
import { defaultDataDir } from '../../paths/data-dir.js';
import { redisFireClaims, redisQueue, type FireClaims, type RedisQueueOptions } from '../../fleet/index.js';
import { needsHomePointer, removeHomePointer, writeHomePointer } from '../control/home-pointer.js';
import { controlSocketPath } from '../../paths/control-endpoint.js';
import { startControlServer, type ControlServer } from '../control/server.js';
import { panelToken } from './token.js';
import { loadConfig } from '../../config/file.js';
import { watchWebhooks, type WebhookWatch } from '../../notify/index.js';
import { ownerTaskGuards } from '../task-guards.js';
import { ownerRunPolicy } from '../run-policy.js';
import type { RunPolicy } from '../../broker/run-policy.js';
import type { PresetInfo } from '../../bridge/contract.js';
import { startSchedules, type HubScheduler } from '../scheduler.js';

export interface HeadlessOptions {
  /** 0 = a free port. @default 0 */
  port?: number;
  /** History and logs. @default $XDG_STATE_HOME/backchannel or ~/.local/state/backchannel */
  dataDir?: string;
  /** Directory whose demo agents (its demo-agents.json) the panel's "New task" offers first. @default scripts/demo-agents */
  demoAgentsDir?: string;
  rendererDir?: string;
  concurrency?: number;
  /** Finished tasks kept in history. @default the broker's (1,000) */
  historyLimit?: number;
  /** Endpoint directory for the task sockets (tests use a private one). */
  ipcDir?: string;
  /** Run tasks on a worker fleet through this Redis queue instead of locally (docs/scale-out.md). */
  redis?: RedisQueueOptions;
  /**
   * The control endpoint's socket path, or false for none. @default controlSocketPath(): in `dataDir`
   * when one is given, else the per-user well-known path. Another hub listening there is an error.
   */
  control?: string | false;
  /** Broker options set by `serve`'s flags: the sub-agents' environment policy, strict tokens. */
  broker?: Pick<BrokerOptions, 'env' | 'requireToken' | 'agentCpu'>;
  /** Reuse the token kept in `<dataDir>/panel-token` (see ./token.ts). @default false: a new token per start */
  keepToken?: boolean;
  /** Endpoints of other parts on the panel's server (MCP over HTTP), made once the broker exists. */
  mounts?: (broker: TaskBroker) => readonly HttpMount[];
  /** Console log level. @default 'warn' */
  consoleLevel?: 'error' | 'warn' | 'info' | 'debug' | false;
  /** What other doors than `backchannel run` may start. @default the owner's (./run-policy.ts): presets and the config file's */
  runPolicy?: RunPolicy;
  /** Fire the schedules kept in `<dataDir>/schedules` (docs/schedules.md). @default true */
  schedules?: boolean;
}

export interface Headless {
  readonly url: string;
  readonly broker: TaskBroker;
  readonly bridge: BrokerBridge;
  readonly server: PanelServer;
  /** The control endpoint, unless `control: false`. */
  readonly control: ControlServer | undefined;
  readonly logPath: string;
  readonly logger: Logger;
  /** The schedules' scheduler, unless `schedules: false`. */
  readonly scheduler: HubScheduler | undefined;
  /** Stops the server, cancels running tasks (grace period, then kill), closes the broker. */
  close(): Promise<void>;
}

export async function startHeadless(options: HeadlessOptions = {}): Promise<Headless> {
  const dataDir = options.dataDir ?? defaultDataDir();
  // One broker per data directory, taken before anything here touches it (log, token, history): a
  // second hub on it says who holds it and stops, and never writes there.
  const lock = await lockDataDir(dataDir);
  const core = await openCore(dataDir, lock, options);
  const { broker, logger, logPath } = core;
  broker.on('warning', (message) => logger.warn(message));
  let webhooks: WebhookWatch;
  let scheduler: HubScheduler | undefined;
  // On a fleet, hubs sharing a schedule claim each fire through the fleet's Redis (docs/schedules.md).
  let claims: FireClaims | undefined;
  try {
    await broker.ready;
    // The config's webhooks (signed, retried in the background: never in the broker's way).
    webhooks = watchWebhooks(broker, loadConfig(), logger);
    // Schedules fire once the broker has recovered its history: a miss while the hub was down is caught up now.
    if (options.schedules !== false) {
      const { redis } = options;
      claims = redis ? redisFireClaims({ redis: redis.redis, name: redis.name, tls: redis.tls }) : undefined;
      scheduler = startSchedules(dataDir, {
        submit: (spec) => broker.submit(spec),
        runPolicy: core.runPolicy,
        logger,
        usageOf: (id) => broker.get(id)?.usage,
        claims,
        onSkipped: (record) => webhooks.scheduleSkipped({ ...record, reason: record.reason! }),
      });
    }
  } catch (error) {
    scheduler?.stop();
    await claims?.close();
    await broker.close();
    throw error;
  }
  const bridge = createBrokerBridge(broker, {
    mode: 'headless',
    version: readOwnVersion(),
    logPath,
    presets: core.presets,
    onListenerError: (error) => logger.error('panel event listener failed', error),
    ...(scheduler ? { scheduler } : {}),
  });
  let servers: Awaited<ReturnType<typeof startServers>>;
  try {
    servers = await startServers(core, bridge, lock, options);
  } catch (error) {
    scheduler?.stop();
    await claims?.close();
    throw error;
  }
  const { server, control } = servers;
  logger.info(`panel served on http://127.0.0.1:${server.port}/ (data in ${dataDir})`);
  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    broker,
    bridge,
    server,
    control,
    logPath,
    logger,
    scheduler,
    close() {
      closing ??= (async () => {
        scheduler?.stop();
        await claims?.close();
        await server.close();
        if (control) removeHomePointer(control.path);
        await control?.close();
        bridge.close();
        webhooks.stop();
        await broker.close();
      })();
      return closing;
    },
  };
}

/** What the hub opens in its data directory before it serves anything. */
interface Core {
  readonly broker: TaskBroker;
  readonly logger: Logger;
  readonly logPath: string;
  readonly token: string;
  readonly presets: PresetInfo[];
  readonly runPolicy: RunPolicy;
}

/** The log, the panel's token, the presets and the run policy, then the broker; the lock is released when a step fails. */
async function openCore(dataDir: string, lock: DataDirLock, options: HeadlessOptions): Promise<Core> {
  try {
    const logPath = logFileIn(dataDir);
    const token = panelToken({ dataDir, keep: options.keepToken });
    const logger = createHeadlessLogger({ file: logPath, console: options.consoleLevel ?? 'warn' });
    const queue = options.redis ? redisQueue(options.redis) : undefined;
    const presets = loadPresets(options.demoAgentsDir ?? defaultDemoAgentsDir(), (message) => logger.warn(message));
    const runPolicy = options.runPolicy ?? ownerRunPolicy({ presets });
    // The broker takes the lock over (and releases it on close).
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
    return { broker, logger, logPath, token, presets, runPolicy };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

/** The log file's path. The log gets the journal's rules: a directory of our own, and no symlink in place of the file. */
function logFileIn(dataDir: string): string {
  ensureDataDir(join(dataDir, 'logs'), 'Log directory');
  const logPath = join(dataDir, 'logs', 'backchannel.log');
  if (lstatSync(logPath, { throwIfNoEntry: false })?.isSymbolicLink()) {
    throw new Error(`${logPath} is a symlink; remove it (logs are never written through one)`);
  }
  return logPath;
}

/** The control endpoint (advertised in the lock), then the panel server; when either fails, all is closed again. */
async function startServers(
  core: Core,
  bridge: BrokerBridge,
  lock: DataDirLock,
  options: HeadlessOptions,
): Promise<{ server: PanelServer; control: ControlServer | undefined }> {
  let control: ControlServer | undefined;
  try {
    const controlPath = options.control ?? controlSocketPath(process.env, options.dataDir);
    if (controlPath !== false) control = await startControlServer({ bridge, path: controlPath, logger: core.logger });
    // Who finds the data directory held learns where this hub listens (see client/discover.ts).
    if (control) lock.advertise({ control: control.path });
    // A client whose host stripped XDG_STATE_HOME looks in ~/.local/state: say there where this hub is.
    if (control && options.control === undefined && needsHomePointer(options.dataDir ?? defaultDataDir())) {
      try {
        writeHomePointer(control.path);
      } catch (error) {
        core.logger.warn(`could not record where this hub listens in ~/.local/state/backchannel: ${(error as Error).message}`);
      }
    }
    const { token, logPath } = core;
    const mounts = options.mounts?.(core.broker) ?? [];
    const server = await startPanelServer({ bridge, port: options.port ?? 0, rendererDir: options.rendererDir, token, logPath, mounts });
    return { server, control };
  } catch (error) {
    await control?.close();
    bridge.close();
    await core.broker.close();
    throw error;
  }
}
