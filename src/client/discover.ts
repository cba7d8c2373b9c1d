/**
 * How a front-end in another process finds the hub: probe the control endpoint (see
 * ../paths/control-endpoint.ts; derived from the data directory, so a host that strips XDG_RUNTIME_DIR
 * from `backchannel mcp`'s environment still finds it), then ask the data directory's lock, whose
 * holder names its hub's endpoint wherever that is; a client whose host stripped XDG_STATE_HOME then tries the
 * state directory of its launcher (../paths/launcher-state.ts). Which front-end does what without one is
 * `openClient`'s policy (./open.ts).
 */
import { resolve } from 'node:path';
import { connectHub, type HubClient } from './hub-client.js';
import { readLockHolder } from '../broker/history/data-dir-lock.js';
import { defaultDataDir } from '../paths/data-dir.js';
import { probeEndpoint, untrustedEndpoint, UntrustedEndpointError } from '../paths/control-socket.js';
import { CONTROL_ENV, controlSocketCandidates, controlSocketPath, endpointIn } from '../paths/control-endpoint.js';
import { launcherStateHome } from '../paths/launcher-state.js';

export type { HubClient } from './hub-client.js';
export { UntrustedEndpointError } from '../paths/control-socket.js';

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
  if (control && (await answers(control))) return control;
  // A host that stripped XDG_STATE_HOME but has it: the hub of the host's state directory (../paths/launcher-state.ts).
  const stateHome = launcherStateHome(env);
  return stateHome === undefined ? undefined : inStateHome({ ...env, XDG_STATE_HOME: stateHome });
}

/** The hub of the state directory `env` names: at its endpoint, or where its data directory's lock says. */
async function inStateHome(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const path = controlSocketPath(env);
  if (await answers(path)) return path;
  const control = (await readLockHolder(defaultDataDir(env)))?.control;
  return control && (await answers(control)) ? control : undefined;
}

async function answers(path: string): Promise<boolean> {
  const problem = untrustedEndpoint(path);
  if (problem !== undefined) throw new UntrustedEndpointError(path, problem);
  return (await probeEndpoint(path)) === 'live';
}

/**
 * The endpoint of the hub of the data directory `dataDir` (one named by `--data-dir`): where its lock's
 * holder says, else in the directory itself; undefined when none answers. The default data directory's
 * hub is `findHubPath`'s (it also asks where hubs of earlier versions and stripped hosts listen).
 */
export async function findHubPathOf(dataDir: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (resolve(dataDir) === resolve(defaultDataDir(env))) return findHubPath(env);
  const control = (await readLockHolder(dataDir))?.control;
  if (control && (await answers(control))) return control;
  const path = endpointIn(dataDir);
  return (await answers(path)) ? path : undefined;
}

/** The running hub's client (of `dataDir`, when given), or undefined when none answers at the control endpoint. */
export async function findHub(env: NodeJS.ProcessEnv = process.env, dataDir?: string): Promise<HubClient | undefined> {
  const path = dataDir === undefined ? await findHubPath(env) : await findHubPathOf(dataDir, env);
  return path === undefined ? undefined : connectHub(path);
}
