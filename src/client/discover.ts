/**
 * How a front-end in another process finds the hub: probe the control endpoint (see
 * ../paths/control-endpoint.ts; derived from the data directory, so a host that strips XDG_RUNTIME_DIR
 * from `backchannel mcp`'s environment still finds it), then ask the data directory's lock, whose
 * holder names its hub's endpoint wherever that is. Without a hub, `openHistory` reads the history
 * on disk (./history.ts), read-only, for commands like `backchannel tasks` and `show`.
 */
import { connectHub, type HubClient } from './hub-client.js';
import type { BackchannelBridge } from '../bridge/contract.js';
import { readLockHolder } from '../broker/history/data-dir-lock.js';
import { defaultDataDir } from '../paths/data-dir.js';
import { probeEndpoint, untrustedEndpoint, UntrustedEndpointError } from '../hub/control/endpoint.js';
import { CONTROL_ENV, controlSocketCandidates } from '../paths/control-endpoint.js';
import { readOnlyHistory } from './history.js';

export { HubLostError, type HubClient } from './hub-client.js';
export { UntrustedEndpointError } from '../hub/control/endpoint.js';

/**
 * The running hub's endpoint, or undefined when none answers. Throws `UntrustedEndpointError` for a
 * socket another user could have put there (see `untrustedEndpoint`), before connecting to it: a
 * fake hub in a shared directory received a task and its secret input, and ran it.
 */
export async function findHubPath(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  for (const path of controlSocketCandidates(env)) if (await answers(path)) return path;
  if (env[CONTROL_ENV]) return undefined;
  // A hub listening elsewhere (its own BACKCHANNEL_CONTROL) still holds the data directory, and says where.
  const control = (await readLockHolder(defaultDataDir(env)))?.control;
  return control && (await answers(control)) ? control : undefined;
}

async function answers(path: string): Promise<boolean> {
  const problem = untrustedEndpoint(path);
  if (problem !== undefined) throw new UntrustedEndpointError(path, problem);
  return (await probeEndpoint(path)) === 'live';
}

/** The running hub's client, or undefined when none answers at the control endpoint. */
export async function findHub(env: NodeJS.ProcessEnv = process.env): Promise<HubClient | undefined> {
  const path = await findHubPath(env);
  return path === undefined ? undefined : connectHub(path);
}

export interface HistoryBridge extends BackchannelBridge {
  close(): Promise<void>;
}

/**
 * The history in `dataDir` as a read-only bridge, while no hub runs (the hub owns the history while
 * it does). Refuses, naming the holder, when a broker holds the directory but no hub of it answers:
 * its running tasks would read as interrupted.
 */
export async function openHistory(dataDir: string = defaultDataDir()): Promise<HistoryBridge> {
  const holder = await readLockHolder(dataDir);
  if (holder) {
    const pid = holder.pid === undefined ? 'pid unknown' : `pid ${holder.pid}`;
    throw new Error(
      `the history in ${dataDir} belongs to a running Backchannel broker (${pid}) whose hub this process cannot reach; use that process, or set ${CONTROL_ENV} to its control endpoint`,
    );
  }
  const bridge = readOnlyHistory(dataDir);
  // Taken before it is replaced: a `close` that called `bridge.close()` called itself, 2,780 stack lines deep.
  const closeBridge = bridge.close;
  return Object.assign(bridge, { close: async () => closeBridge() });
}
