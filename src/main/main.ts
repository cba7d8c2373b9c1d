/**
 * Backchannel's Electron shell, the only code that imports 'electron'. The broker runs here, in the
 * main process; the panel is a sandboxed window talking to it through the preload's bridge.
 *
 *   electron dist/main/main.js
 */
import { app, BrowserWindow, ipcMain, Notification, protocol, screen, shell, type Event as ElectronEvent } from 'electron';
import electronLog from 'electron-log/main.js';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskBroker } from '../broker/broker.js';
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';
import { createBrokerBridge } from '../hosts/broker-bridge.js';
import { defaultTemplatesDir, loadTemplates } from '../templates/catalog.js';
import { registerBridgeHandlers, panelSenderCheck } from './ipc-handlers.js';
import { anchoredBounds } from './position.js';
import { PANEL_ORIGIN, PANEL_SCHEME, PANEL_URL, panelRequestHandler } from './panel-protocol.js';
import { AppTray } from './tray.js';

const here = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));
/** Packaged: templates and icons are extra resources; in a checkout they sit in the repository. */
const resources = app.isPackaged ? process.resourcesPath : here('../../');
const ASSETS_DIR = join(resources, 'assets');
const DEMO_AGENTS_DIR = app.isPackaged ? join(process.resourcesPath, 'demo-agents') : defaultTemplatesDir();
/** Sub-agent templates (packaged: an extra resource; in a checkout: templates/). */
const TEMPLATES_DIR = app.isPackaged ? join(process.resourcesPath, 'templates') : undefined;
const RENDERER_DIR = here('../renderer/');
const PRELOAD = here('../preload/index.cjs');
const PANEL_SIZE = { width: 440, height: 620 };
/** Secure defaults, spelled out even where they are Electron's defaults. */
const PANEL_WEB_PREFERENCES = {
  preload: PRELOAD,
  contextIsolation: true,
  sandbox: true,
  nodeIntegration: false,
  webSecurity: true,
  spellcheck: false,
} as const;
/** Tray menu and tooltip refresh at most this often (menus are rebuilt from scratch). */
const TRAY_REFRESH_MS = 1000;

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
  electronLog.initialize({ preload: false });
  electronLog.transports.file.level = 'info';
  electronLog.transports.console.level = 'warn';
  const logger = electronLog.scope('main');
  const logPath = electronLog.transports.file.getFile().path;

  await app.whenReady();
  if (process.platform === 'darwin') app.dock?.hide();

  const dataDir = join(app.getPath('userData'), 'state');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const broker = new TaskBroker({ dataDir, logger });
  broker.on('warning', (message) => logger.warn(message));
  await broker.ready;

  const bridge = createBrokerBridge(broker, {
    mode: 'electron',
    version: app.getVersion(),
    logPath,
    templates: loadTemplates(DEMO_AGENTS_DIR, (message) => logger.warn(message), TEMPLATES_DIR),
    openLog: async (path) => {
      const error = await shell.openPath(path);
      if (error) throw new Error(`Could not open the log (${error}); it is at ${path}`);
    },
    onListenerError: (error) => logger.error('panel event listener failed', error),
  });

  protocol.handle(PANEL_SCHEME, panelRequestHandler(RENDERER_DIR));
  lockDown(logger);

  let panel: BrowserWindow | undefined;
  let anchored = false;
  const handlers = registerBridgeHandlers(ipcMain, bridge, {
    isTrustedSender: panelSenderCheck(PANEL_ORIGIN, () => (panel && !panel.isDestroyed() ? panel.webContents.id : undefined)),
    onRefused: (channel, event) => logger.warn(`refused IPC ${channel} from ${event.senderFrame?.url ?? 'an unknown frame'}`),
  });

  function createPanel(): BrowserWindow {
    const win = new BrowserWindow({
      ...PANEL_SIZE,
      minWidth: 360,
      minHeight: 360,
      show: false,
      title: 'Backchannel',
      icon: join(ASSETS_DIR, 'icon.png'),
      backgroundColor: '#00000000',
      webPreferences: PANEL_WEB_PREFERENCES,
    });
    win.setMenuBarVisibility(false);
    win.on('blur', () => {
      if (anchored && !win.webContents.isDevToolsOpened()) win.hide();
    });
    win.on('close', (event) => {
      // Closing the panel keeps the app in the tray; Quit is in the tray menu.
      if (!quitting) {
        event.preventDefault();
        win.hide();
      }
    });
    win.loadURL(PANEL_URL).catch((error: unknown) => electronLog.error('panel failed to load', error));
    return win;
  }

  /** Shows the panel next to the tray icon, or as a normal window where the icon's position is unknown. */
  function showPanel(taskId?: string): void {
    panel ??= createPanel();
    const trayBounds = tray.tray.getBounds();
    const display = screen.getDisplayNearestPoint({ x: trayBounds.x, y: trayBounds.y });
    const bounds = anchoredBounds(trayBounds, display.workArea, PANEL_SIZE);
    anchored = bounds !== undefined;
    if (bounds) panel.setBounds(bounds);
    else if (!panel.isVisible()) panel.center();
    panel.setSkipTaskbar(anchored);
    // Only the fragment changes: the page opens the task without reloading (see panel.ts routing).
    if (taskId) panel.loadURL(`${PANEL_URL}#task=${encodeURIComponent(taskId)}`).catch(() => {});
    panel.show();
    panel.focus();
  }

  const tray = new AppTray(ASSETS_DIR, {
    openPanel: () => showPanel(),
    togglePanel: () => (panel?.isVisible() && panel.isFocused() ? panel.hide() : showPanel()),
    openTask: (id) => showPanel(id),
    setPaused: (paused) => void bridge.setPaused(paused),
    openLog: () => void bridge.openLog().catch((error: unknown) => logger.error(error)),
    quit: () => app.quit(),
  });

  let trayTimer: NodeJS.Timeout | undefined;
  const refreshTray = (): void => {
    trayTimer = undefined;
    tray.update(broker.tasks(), broker.paused);
  };
  broker.on('update', (update: TaskUpdate) => {
    if (update.kind === 'ended') notifyEnded(broker.get(update.taskId));
    if (update.kind === 'ask') notifyQuestion(broker.get(update.taskId));
    trayTimer ??= setTimeout(refreshTray, TRAY_REFRESH_MS);
  });
  broker.on('paused', () => {
    trayTimer ??= setTimeout(refreshTray, TRAY_REFRESH_MS);
  });
  refreshTray();

  function notifyEnded(task: TaskSnapshot | undefined): void {
    // Tasks cancelled by quitting are not news.
    if (!task || quitting) return;
    const ok = task.state === 'succeeded';
    notify(task.id, {
      title: `${ok ? 'Done' : task.state === 'cancelled' ? 'Cancelled' : 'Failed'}: ${task.label}`,
      body: ok ? 'The sub-agent finished. Click to see the result.' : (task.message ?? task.reason ?? task.state),
      silent: ok,
    });
  }

  /** A sub-agent waits for an answer: say so, and open its task (with the answer box) on click. */
  function notifyQuestion(task: TaskSnapshot | undefined): void {
    const question = task?.pendingQuestion;
    if (!task || !question || quitting) return;
    notify(task.id, { title: `Question from ${task.label}`, body: question.question, silent: false });
  }

  function notify(taskId: string, options: { title: string; body: string; silent: boolean }): void {
    if (!Notification.isSupported()) return;
    const notification = new Notification(options);
    notification.on('click', () => showPanel(taskId));
    notification.show();
  }

  app.on('second-instance', () => showPanel());
  app.on('activate', () => showPanel());
  // A tray app keeps running without windows.
  app.on('window-all-closed', () => {});

  let quitting = false;
  let shutdownDone = false;
  app.on('before-quit', (event: ElectronEvent) => {
    quitting = true;
    if (shutdownDone) return;
    event.preventDefault();
    logger.info('quitting: cancelling running tasks');
    handlers.dispose();
    bridge.close();
    // Cancels running tasks (grace period, then kill), removes every endpoint, flushes history.
    broker
      .close()
      .catch((error: unknown) => logger.error('broker close failed', error))
      .finally(() => {
        shutdownDone = true;
        if (trayTimer) clearTimeout(trayTimer);
        tray.tray.destroy();
        app.quit();
      });
  });

  if (process.env.BACKCHANNEL_TEST_HOOKS === '1') {
    // Only for the Playwright Electron spec: a tray cannot be clicked from outside the process.
    (globalThis as Record<string, unknown>).__backchannelTest = {
      tray: () => ({ tooltip: tray.tooltip, menu: tray.menuLabels() }),
      clickMenuItem: (label: string) => tray.clickMenuItem(label),
      webPreferences: () => ({ ...PANEL_WEB_PREFERENCES }),
      refreshTray,
    };
  }
  logger.info(`Backchannel ${app.getVersion()} started; log at ${logPath}`);
  if (process.env.BACKCHANNEL_SHOW_PANEL === '1' || !existsSync(join(ASSETS_DIR, 'tray-light.png'))) showPanel();
}

/** Denies new windows, navigation away from the panel, and every permission request. */
function lockDown(logger: { warn(...args: unknown[]): void }): void {
  app.on('web-contents-created', (_event, contents) => {
    contents.setWindowOpenHandler(({ url }) => {
      logger.warn(`blocked window.open(${url.slice(0, 100)})`);
      return { action: 'deny' };
    });
    contents.on('will-navigate', (event, url) => {
      if (!url.startsWith(`${PANEL_ORIGIN}/`)) {
        logger.warn(`blocked navigation to ${url.slice(0, 100)}`);
        event.preventDefault();
      }
    });
    contents.session.setPermissionRequestHandler((_contents, permission, callback) => {
      callback(permission === 'clipboard-sanitized-write');
    });
  });
}
