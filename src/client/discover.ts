/**
 * How a front-end in another process finds the hub: probe the well-known control endpoint (see
 * ./paths.ts) and connect, or learn that none runs. Without a hub, `openHistory` gives read access to
 * the history on disk through the same bridge (a broker over the default data directory that starts
 * no task), for commands like `backchannel tasks` and `show`.
 */
import { connectHub, type HubClient } from './hub-client.js';
import type { BackchannelBridge } from '../bridge/contract.js';
import { TaskBroker } from '../broker/broker.js';
import { silentLogger } from '../broker/log.js';
import { readOwnVersion } from '../version.js';
import { createBrokerBridge } from '../hub/broker-bridge.js';
import { defaultDataDir } from '../hub/paths.js';
import { probeEndpoint } from '../hub/control/endpoint.js';
import { controlSocketPath } from '../hub/control/paths.js';

export { HubLostError, type HubClient } from './hub-client.js';

/** The running hub's client, or undefined when none answers at the control endpoint. */
export async function findHub(env: NodeJS.ProcessEnv = process.env): Promise<HubClient | undefined> {
  const path = controlSocketPath(env);
  if ((await probeEndpoint(path)) !== 'live') return undefined;
  return connectHub(path);
}

export interface HistoryBridge extends BackchannelBridge {
  /** Closes the history broker. */
  close(): Promise<void>;
}

/** The history in `dataDir` as a bridge, while no hub runs (the hub owns the history while it does). */
export async function openHistory(dataDir: string = defaultDataDir()): Promise<HistoryBridge> {
  const broker = new TaskBroker({ dataDir, logger: silentLogger });
  await broker.ready;
  const bridge = createBrokerBridge(broker, { mode: 'headless', version: readOwnVersion(), logPath: '' });
  return Object.assign(bridge, {
    async close() {
      bridge.close();
      await broker.close();
    },
  });
}
