/**
 * Backchannel's Electron shell; src/main (with src/preload) is the only code that imports
 * 'electron'. The broker runs here, in the main process; the panel is a sandboxed window talking to
 * it through the preload's bridge. This file wires the parts: broker and bridge, the panel protocol
 * and IPC handlers, the panel window (./panel-window.ts), notifications (./notifier.ts), the tray
 * (./tray.ts), the app lifecycle (./lifecycle.ts), and MCP over HTTP at /mcp as `backchannel serve`
 * mounts it (src/mcp/http-mount.ts), on a loopback port of its own (src/hub/http/mount-server.ts).
 *
 *   electron dist/main/main.js
 */
import { app, dialog, ipcMain, protocol, shell } from 'electron';
import electronLog from 'electron-log/main.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskBroker } from '../broker/broker.js';
import { BrokerError } from '../broker/errors.js';
import type { Logger } from '../broker/log.js';
import type { TaskUpdate } from '../model/task.js';
import { createBrokerBridge, type BrokerBridge } from '../hub/broker-bridge.js';
import { controlSocketPath } from '../paths/control-endpoint.js';
import { startControlServer, type ControlServer } from '../hub/control/server.js';
import { desktopHistory, moveLegacyHistory } from '../hub/history-home.js';
import { defaultDemoAgentsDir, loadPresets } from '../templates/presets.js';
import { loadConfig } from '../config/file.js';
import { watchWebhooks, type WebhookWatch } from '../notify/index.js';
import { ownerTaskGuards } from '../hub/task-guards.js';
import { ownerRunPolicy } from '../hub/run-policy.js';
import { startSchedules, type HubScheduler } from '../hub/scheduler.js';
import { startMountServer, type MountServer } from '../hub/http/mount-server.js';
import { clientOf } from '../client/index.js';
import { mcpHttpMount, readMcpToken } from '../mcp/http-mount.js';
import { MCP_PATH } from '../mcp/http-endpoint.js';
import type { PresetInfo } from '../bridge/contract.js';
import { registerBridgeHandlers, panelSenderCheck } from './ipc-handlers.js';
import { keepRunningInTray, lockDown, quitAfterShutdown } from './lifecycle.js';
import { Notifier } from './notifier.js';
import { PANEL_ORIGIN, PANEL_SCHEME, panelRequestHandler } from './panel-protocol.js';
import { PanelWindow } from './panel-window.js';
import { AppTray, TrayController } from './tray.js';

const here = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));
/** Packaged: templates and icons are extra resources; in a checkout they sit in the repository. */
const resources = app.isPackaged ? process.resourcesPath : here('../../');
const ASSETS_DIR = join(resources, 'assets');
const DEMO_AGENTS_DIR = app.isPackaged ? join(process.resourcesPath, 'demo-agents') : defaultDemoAgentsDir();
/** Sub-agent templates (packaged: an extra resource; in a checkout: templates/). */
const TEMPLATES_DIR = app.isPackaged ? join(process.resourcesPath, 'templates') : undefined;
const RENDERER_DIR = here('../renderer/');
const PRELOAD = here('../preload/index.cjs');

// Must happen before `ready`: a standard, secure scheme gives the panel a real origin.
protocol.registerSchemesAsPrivileged([{ scheme: PANEL_SCHEME, privileges: { standard: true, secure: true } }]);

// Tests (and portable setups) can keep history and logs in a directory of their own.
if (process.env.BACKCHANNEL_USER_DATA) app.setPath('userData', process.env.BACKCHANNEL_USER_DATA);

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  void start();
}

async function start(): Promise<void> {
  const { logger, logPath } = initLog();
  await app.whenReady();
  if (process.platform === 'darwin') app.dock?.hide();

  const broker = await startBroker(logger).catch((error: unknown) => {
    // The one history home is taken (a `backchannel serve` runs on it): say so and quit, never a second broker.
    if (!(error instanceof BrokerError) || error.code !== 'data_dir_in_use') throw error;
    logger.error(error.message);
    dialog.showErrorBox('Backchannel', `${error.message}\nStop \`backchannel serve\` first, or use its panel.`);
    app.exit(1);
    return undefined;
  });
  if (!broker) return;
  const webhooks = startWebhooks(broker, logger);
  const bridge = createBridge(broker, logger, logPath);
  const control = await startControl(bridge, logger);
  const mcp = await startMcpHttp(broker, logger);
  protocol.handle(PANEL_SCHEME, panelRequestHandler(RENDERER_DIR));
  lockDown(logger);

  // The tray is created below; the panel asks it for the icon's position only when shown.
  const panel = new PanelWindow({ assetsDir: ASSETS_DIR, preload: PRELOAD, trayBounds: () => appTray.tray.getBounds() });
  const handlers = registerBridgeHandlers(ipcMain, bridge, {
    isTrustedSender: panelSenderCheck(PANEL_ORIGIN, () => panel.webContentsId),
    onRefused: (channel, event) => logger.warn(`refused IPC ${channel} from ${event.senderFrame?.url ?? 'an unknown frame'}`),
  });
  const appTray = new AppTray(ASSETS_DIR, {
    openPanel: () => panel.show(),
    togglePanel: () => panel.toggle(),
    openTask: (id) => panel.show(id),
    setPaused: (paused) => void bridge.setPaused(paused),
    openLog: () => void bridge.openLog().catch((error: unknown) => logger.error(error)),
    quit: () => app.quit(),
  });
  const trayController = new TrayController(appTray, broker);
  const notifier = new Notifier({
    openTask: (taskId) => panel.show(taskId),
    // Answered in the notification: the panel may have answered first, which the bridge refuses in one line.
    answer: (taskId, askId, text) => void bridge.answer(taskId, askId, text).catch((error: Error) => logger.warn(error.message)),
  });

  broker.on('update', (update: TaskUpdate) => {
    if (update.kind === 'ended' || update.kind === 'ask') notifier.changed(broker.get(update.taskId));
    trayController.changed();
  });
  broker.on('paused', () => trayController.changed());
  trayController.refresh();

  keepRunningInTray(() => panel.show());
  quitAfterShutdown({
    quitting: () => {
      notifier.mute();
      panel.allowClose();
    },
    shutdown: async () => {
      logger.info('quitting: cancelling running tasks');
      handlers.dispose();
      scheduler?.stop();
      await control?.close();
      await mcp?.close();
      bridge.close();
      webhooks.stop();
      // Cancels running tasks (grace period, then kill), removes every endpoint, flushes history.
      await broker.close().catch((error: unknown) => logger.error('broker close failed', error));
    },
    done: () => trayController.destroy(),
  });

  if (process.env.BACKCHANNEL_TEST_HOOKS === '1') {
    // Only for the Playwright Electron spec: a tray cannot be clicked from outside the process.
    (globalThis as Record<string, unknown>).__backchannelTest = {
      tray: () => ({ tooltip: appTray.tooltip, menu: appTray.menuLabels() }),
      clickMenuItem: (label: string) => appTray.clickMenuItem(label),
      webPreferences: () => ({ ...panel.webPreferences }),
      refreshTray: () => trayController.refresh(),
    };
  }
  logger.info(`Backchannel ${app.getVersion()} started; log at ${logPath}`);
  if (process.env.BACKCHANNEL_SHOW_PANEL === '1' || !existsSync(join(ASSETS_DIR, 'tray-light.png'))) panel.show();
}

/**
 * The hub's control endpoint next to the broker, so terminals and MCP clients reach this broker.
 * With a test's own user data (BACKCHANNEL_USER_DATA) it lives there, never at the user's well-known
 * path. If another hub holds the endpoint (a `backchannel serve`), the app runs without one.
 */
async function startControl(bridge: BrokerBridge, logger: Logger): Promise<ControlServer | undefined> {
  const own = process.env.BACKCHANNEL_USER_DATA ? join(app.getPath('userData'), 'state') : undefined;
  try {
    return await startControlServer({ bridge, path: controlSocketPath(process.env, own), logger });
  } catch (error) {
    logger.warn(`no control endpoint: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * MCP over HTTP, as `serve` serves it (the same mount, bearer token and checks), on the config's `serve.port` (so a
 * client set up for `serve` finds the app too) or a free port, logged. Without it the app still runs: the reason is
 * logged in one line. The token is never logged: clients read it from its file.
 */
async function startMcpHttp(broker: TaskBroker, logger: Logger): Promise<MountServer | undefined> {
  try {
    const token = readMcpToken();
    const port = Number(loadConfig().sections.serve?.port);
    const mounts = [mcpHttpMount(clientOf(broker), app.getVersion(), token.secret)];
    const server = await startMountServer({ mounts, port: Number.isInteger(port) && port > 0 && port < 65536 ? port : 0 });
    logger.info(`MCP (Streamable HTTP): ${server.urlOf(MCP_PATH)}  (Authorization: Bearer <the token in ${token.file}>)`);
    return server;
  } catch (error) {
    logger.error(`no MCP over HTTP: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * The config file's webhooks (docs/notifications.md), as `serve` sends them. A wrong `notify:`
 * section is logged in its one line and the app runs without webhooks (a dialog at every start
 * would be worse than a line in the log the tray opens).
 */
function startWebhooks(broker: TaskBroker, logger: Logger): WebhookWatch {
  try {
    return watchWebhooks(broker, loadConfig(), logger);
  } catch (error) {
    logger.error(`no webhooks: ${(error as Error).message}`);
    return { stop: () => {}, scheduleSkipped: () => {} };
  }
}

/** electron-log: info and up to the file, warnings to the console. */
function initLog(): { logger: Logger; logPath: string } {
  electronLog.initialize({ preload: false });
  electronLog.transports.file.level = 'info';
  electronLog.transports.console.level = 'warn';
  return { logger: electronLog.scope('main'), logPath: electronLog.transports.file.getFile().path };
}

/** What the panel's New task offers (and, with the config file's run policy, what other doors may run). */
function appPresets(logger: Logger): PresetInfo[] {
  return loadPresets(DEMO_AGENTS_DIR, (message) => logger.warn(message), TEMPLATES_DIR);
}

/** The schedules' scheduler (../hub/scheduler.ts), once the broker is up. */
let scheduler: HubScheduler | undefined;

/**
 * The broker with its history in the one home every headless command reads (../hub/history-home.ts;
 * an earlier version's history in the app's user data is moved there once), logging through
 * electron-log (passed explicitly).
 */
async function startBroker(logger: Logger): Promise<TaskBroker> {
  const { dataDir, legacy } = desktopHistory(app.getPath('userData'));
  if (legacy) {
    const moved = await moveLegacyHistory(legacy, dataDir).catch((error: unknown) => {
      logger.warn(`the earlier history in ${legacy} was not moved: ${(error as Error).message}`);
      return undefined;
    });
    if (moved?.kind === 'moved' || moved?.kind === 'kept') logger.warn(moved.notice);
  }
  const runPolicy = ownerRunPolicy({ presets: appPresets(logger) });
  const broker = new TaskBroker({ dataDir, logger, runPolicy, ...ownerTaskGuards() });
  broker.on('warning', (message) => logger.warn(message));
  await broker.ready;
  try {
    scheduler = startSchedules(dataDir, {
      submit: (spec) => broker.submit(spec),
      runPolicy,
      logger,
      usageOf: (id) => broker.get(id)?.usage,
    });
  } catch (error) {
    logger.error(`schedules do not fire: ${(error as Error).message}`);
  }
  return broker;
}

function createBridge(broker: TaskBroker, logger: Logger, logPath: string): BrokerBridge {
  return createBrokerBridge(broker, {
    mode: 'electron',
    version: app.getVersion(),
    logPath,
    presets: appPresets(logger),
    openLog: async (path) => {
      const error = await shell.openPath(path);
      if (error) throw new Error(`Could not open the log (${error}); it is at ${path}`);
    },
    onListenerError: (error) => logger.error('panel event listener failed', error),
    ...(scheduler ? { scheduler } : {}),
  });
}
