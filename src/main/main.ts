/**
 * Backchannel's Electron shell; src/main (with src/preload) is the only code that imports 'electron'. The hub runs
 * here, in the main process: the one hub assembly (../hub/assemble.ts) through ../desktop/app-hub.ts, which also
 * serves MCP over HTTP at /mcp on a loopback port of its own. This file adds only what is Electron's: the panel
 * protocol and IPC handlers, the panel window (./panel-window.ts), notifications (./notifier.ts), the tray (./tray.ts)
 * and the app lifecycle (./lifecycle.ts, ../desktop/lifecycle.ts).
 *
 *   electron dist/main/main.js
 */
import { app, dialog, ipcMain, protocol, shell } from 'electron';
import electronLog from 'electron-log/main.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BrokerError } from '../broker/errors.js';
import type { Logger } from '../broker/log.js';
import { defaultDemoAgentsDir } from '../templates/presets.js';
import { startAppHub, type AppHub } from '../desktop/app-hub.js';
import { registerBridgeHandlers, panelSenderCheck } from '../desktop/ipc-handlers.js';
import { keepRunningInTray, quitAfterShutdown } from '../desktop/lifecycle.js';
import { lockDown } from './lifecycle.js';
import { Notifier } from './notifier.js';
import { PANEL_ORIGIN, PANEL_SCHEME, panelRequestHandler } from '../desktop/panel-protocol.js';
import { PanelWindow } from './panel-window.js';
import { TrayController } from '../desktop/tray-menu.js';
import { AppTray } from './tray.js';

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
  const hub = await startHub(logger, logPath);
  if (!hub) return;
  protocol.handle(PANEL_SCHEME, panelRequestHandler(RENDERER_DIR));
  lockDown(logger);
  const { bridge, broker } = hub;
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
    answer: (taskId, askId, text) =>
      void bridge.answer(taskId, askId, text, 'notification').catch((error: Error) => logger.warn(error.message)),
  });
  hub.notifications.subscribe(notifier.announce);
  broker.on('update', () => trayController.changed());
  broker.on('paused', () => trayController.changed());
  trayController.refresh();
  keepRunningInTray(app, () => panel.show());
  quitAfterShutdown(app, {
    quitting: () => {
      notifier.mute();
      panel.allowClose();
    },
    shutdown: async () => {
      logger.info('quitting: cancelling running tasks');
      handlers.dispose();
      // Cancels running tasks (grace period, then kill), removes every endpoint, flushes history.
      await hub.close().catch((error: unknown) => logger.error('hub close failed', error));
    },
    done: () => trayController.destroy(),
  });
  if (process.env.BACKCHANNEL_TEST_HOOKS === '1') {
    // Only for the stand-in Electron test and the Playwright Electron spec: a tray cannot be clicked from outside the process.
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

/** The hub (../desktop/app-hub.ts); when the one history home is taken (a `backchannel serve` runs on it), says so and quits. */
async function startHub(logger: Logger, logPath: string): Promise<AppHub | undefined> {
  try {
    return await startAppHub({
      userData: app.getPath('userData'),
      logger,
      logPath,
      version: app.getVersion(),
      demoAgentsDir: DEMO_AGENTS_DIR,
      templatesDir: TEMPLATES_DIR,
      openLog: async (path) => {
        const error = await shell.openPath(path);
        if (error) throw new Error(`Could not open the log (${error}); it is at ${path}`);
      },
    });
  } catch (error) {
    if (!(error instanceof BrokerError) || error.code !== 'data_dir_in_use') throw error;
    logger.error(error.message);
    dialog.showErrorBox('Backchannel', `${error.message}\nStop \`backchannel serve\` first, or use its panel.`);
    app.exit(1);
    return undefined;
  }
}

/** electron-log: info and up to the file, warnings to the console. */
function initLog(): { logger: Logger; logPath: string } {
  electronLog.initialize({ preload: false });
  electronLog.transports.file.level = 'info';
  electronLog.transports.console.level = 'warn';
  return { logger: electronLog.scope('main'), logPath: electronLog.transports.file.getFile().path };
}
