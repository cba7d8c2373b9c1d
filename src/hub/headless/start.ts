/**
 * Headless mode in one call: the hub (../assemble.ts) over `dataDir`, plus the panel server with the hub's mounts (MCP
 * over HTTP). Used by `backchannel serve` and `npm start` where Electron is not installed.
 */
import type { BrokerOptions } from '../../broker/broker.js';
import type { TaskBroker } from '../../broker/broker.js';
import type { Logger } from '../../base/log.js';
import type { RunPolicy } from '../../broker/run-policy.js';
import type { RedisQueueOptions } from '../../fleet/index.js';
import { readOwnVersion } from '../../version.js';
import type { BrokerBridge } from '../broker-bridge.js';
import type { ControlServer } from '../control/server.js';
import type { HttpMount } from '../http/mounts.js';
import { assembleHub, type Hub, type HubCore } from '../assemble.js';
import type { HubScheduler } from '../scheduler.js';
import { startPanelServer, type PanelServer } from './server.js';
import { panelToken } from './token.js';

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
  /** Endpoints of other parts on the panel's server (MCP over HTTP), made once the bridge exists. */
  mounts?: (hub: HubCore) => readonly HttpMount[];
  /** Console log level. @default 'warn' */
  consoleLevel?: 'error' | 'warn' | 'info' | 'debug' | false;
  /** What other doors than `backchannel run` may start. @default the owner's (../run-policy.ts): presets and the config file's */
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
  const { port, rendererDir, keepToken, ...hubOptions } = options;
  const hub = await assembleHub({ ...hubOptions, mode: 'headless', version: readOwnVersion() });
  let server: PanelServer;
  try {
    const token = panelToken({ dataDir: hub.dataDir, keep: keepToken });
    server = await startPanelServer({ bridge: hub.bridge, port: port ?? 0, rendererDir, token, logPath: hub.logPath, mounts: hub.mounts });
  } catch (error) {
    for (const mount of hub.mounts) await mount.close?.();
    await hub.close();
    throw error;
  }
  hub.logger.info(`panel served on http://127.0.0.1:${server.port}/ (data in ${hub.dataDir})`);
  return headlessOf(hub, server);
}

function headlessOf(hub: Hub, server: PanelServer): Headless {
  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    broker: hub.broker,
    bridge: hub.bridge,
    server,
    control: hub.control,
    logPath: hub.logPath,
    logger: hub.logger,
    scheduler: hub.scheduler,
    close() {
      closing ??= (async () => {
        hub.scheduler?.stop();
        await server.close();
        await hub.close();
      })();
      return closing;
    },
  };
}
