/**
 * The desktop app's hub, without Electron (so it runs, and is tested, under plain Node): the history moved once into
 * the one home (../hub/history-home.ts), the one hub assembly (../hub/assemble.ts) — lenient, since a dialog at every
 * start is worse than a line in the log the tray opens — and MCP over HTTP on a loopback port of its own
 * (../hub/http/mount-server.ts), as `serve` mounts it on its panel's port. ../main/main.ts adds the tray, the window and IPC.
 */
import type { Logger } from '../broker/log.js';
import { loadConfig } from '../config/file.js';
import { commandSection } from '../config/sections.js';
import { assembleHub, type Hub } from '../hub/assemble.js';
import { desktopHistory, moveLegacyHistory } from '../hub/history-home.js';
import { startMountServer, type MountServer } from '../hub/http/mount-server.js';
import { MCP_PATH } from '../mcp/http-endpoint.js';
import { mcpHttpMounts, readMcpToken } from '../mcp/http-mount.js';

export interface AppHubOptions {
  /** Electron's `userData` (a test's own with BACKCHANNEL_USER_DATA: history and control endpoint inside it). */
  userData: string;
  logger: Logger;
  logPath: string;
  version: string;
  demoAgentsDir?: string;
  templatesDir?: string;
  openLog?: (path: string) => Promise<void>;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
}

export interface AppHub extends Hub {
  /** MCP over HTTP's server, unless it could not start (the reason is logged). */
  readonly mcp: MountServer | undefined;
}

/** The app's hub; throws BrokerError `data_dir_in_use` when another hub holds the history (main.ts says so and quits). */
export async function startAppHub(options: AppHubOptions): Promise<AppHub> {
  const { logger } = options;
  const env = options.env ?? process.env;
  const { dataDir, legacy } = desktopHistory(options.userData, env);
  if (legacy) await moveLegacy(legacy, dataDir, logger);
  const mcpToken = readToken(logger, env);
  const hub = await assembleHub({
    mode: 'electron',
    version: options.version,
    dataDir,
    log: { logger, logPath: options.logPath },
    demoAgentsDir: options.demoAgentsDir,
    templatesDir: options.templatesDir,
    openLog: options.openLog,
    lenient: true,
    env,
    ...(mcpToken ? { mounts: mcpHttpMounts(options.version, mcpToken.secret) } : {}),
  });
  const mcp = await serveMounts(hub, mcpToken?.file, env);
  let closing: Promise<void> | undefined;
  return {
    ...hub,
    mcp,
    close() {
      closing ??= (async () => {
        hub.scheduler?.stop();
        await mcp?.close().catch((error: unknown) => logger.error('closing MCP over HTTP:', error));
        await hub.close();
      })();
      return closing;
    },
  };
}

/** An earlier version's history in the app's user data, moved into the one home once (the notice is logged). */
async function moveLegacy(legacy: string, dataDir: string, logger: Logger): Promise<void> {
  const moved = await moveLegacyHistory(legacy, dataDir).catch((error: unknown) => {
    logger.warn(`the earlier history in ${legacy} was not moved: ${(error as Error).message}`);
    return undefined;
  });
  if (moved?.kind === 'moved' || moved?.kind === 'kept') logger.warn(moved.notice);
}

function readToken(logger: Logger, env: NodeJS.ProcessEnv): { secret: string; file: string } | undefined {
  try {
    return readMcpToken(env);
  } catch (error) {
    logger.error(`no MCP over HTTP: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * The hub's mounts on the config's `serve.port` (so a client set up for `serve` finds the app too) or a free port,
 * logged. Without it the app still runs: the reason is logged in one line. The token is never logged: clients read it
 * from its file.
 */
async function serveMounts(hub: Hub, tokenFile: string | undefined, env: NodeJS.ProcessEnv): Promise<MountServer | undefined> {
  if (hub.mounts.length === 0) return undefined;
  try {
    // Read through the `serve:` section's one shape, as `serve` reads it: a bad port is named, not replaced.
    const port = commandSection(loadConfig(env), 'serve').port ?? 0;
    const server = await startMountServer({ mounts: hub.mounts, port });
    hub.logger.info(`MCP (Streamable HTTP): ${server.urlOf(MCP_PATH)}  (Authorization: Bearer <the token in ${tokenFile}>)`);
    return server;
  } catch (error) {
    for (const mount of hub.mounts) await mount.close?.();
    hub.logger.error(`no MCP over HTTP: ${(error as Error).message}`);
    return undefined;
  }
}
