/**
 * The panel window: created on first show, anchored next to the tray icon where its position is
 * known (then it hides on blur, like a menu), a normal centred window elsewhere. Closing hides it;
 * the app keeps running in the tray until Quit.
 */
import { BrowserWindow, screen, type Rectangle } from 'electron';
import electronLog from 'electron-log/main.js';
import { join } from 'node:path';
import { anchoredBounds } from '../desktop/position.js';
import { PANEL_URL } from '../desktop/panel-protocol.js';

const PANEL_SIZE = { width: 440, height: 620 };

export interface PanelWindowOptions {
  assetsDir: string;
  preload: string;
  /** Where the tray icon is (zero-sized where the platform does not say). */
  trayBounds(): Rectangle;
}

/** Secure defaults, spelled out even where they are Electron's defaults. */
function secureWebPreferences(preload: string) {
  return { preload, contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true, spellcheck: false } as const;
}

export class PanelWindow {
  readonly webPreferences: ReturnType<typeof secureWebPreferences>;
  #window: BrowserWindow | undefined;
  #anchored = false;
  /** Set when the app quits: closing then really closes. */
  #quitting = false;

  constructor(private readonly options: PanelWindowOptions) {
    this.webPreferences = secureWebPreferences(options.preload);
  }

  /** The panel's webContents id while it exists (the IPC handlers trust only it). */
  get webContentsId(): number | undefined {
    const win = this.#window;
    return win && !win.isDestroyed() ? win.webContents.id : undefined;
  }

  /** Lets the window close for real (the app is quitting). */
  allowClose(): void {
    this.#quitting = true;
  }

  /** Shows the panel next to the tray icon, or as a normal window where the icon's position is unknown. */
  show(taskId?: string): void {
    const panel = (this.#window ??= this.#create());
    const trayBounds = this.options.trayBounds();
    const display = screen.getDisplayNearestPoint({ x: trayBounds.x, y: trayBounds.y });
    const bounds = anchoredBounds(trayBounds, display.workArea, PANEL_SIZE);
    this.#anchored = bounds !== undefined;
    if (bounds) panel.setBounds(bounds);
    else if (!panel.isVisible()) panel.center();
    panel.setSkipTaskbar(this.#anchored);
    // Only the fragment changes: the page opens the task without reloading (see panel.ts routing).
    if (taskId) panel.loadURL(`${PANEL_URL}#task=${encodeURIComponent(taskId)}`).catch(() => {});
    panel.show();
    panel.focus();
  }

  /** Hides a visible, focused panel; shows it otherwise. */
  toggle(): void {
    const panel = this.#window;
    if (panel?.isVisible() && panel.isFocused()) panel.hide();
    else this.show();
  }

  #create(): BrowserWindow {
    const win = new BrowserWindow({
      ...PANEL_SIZE,
      minWidth: 360,
      minHeight: 360,
      show: false,
      title: 'Backchannel',
      icon: join(this.options.assetsDir, 'icon.png'),
      backgroundColor: '#00000000',
      webPreferences: this.webPreferences,
    });
    win.setMenuBarVisibility(false);
    win.on('blur', () => {
      if (this.#anchored && !win.webContents.isDevToolsOpened()) win.hide();
    });
    win.on('close', (event) => {
      // Closing the panel keeps the app in the tray; Quit is in the tray menu.
      if (!this.#quitting) {
        event.preventDefault();
        win.hide();
      }
    });
    win.loadURL(PANEL_URL).catch((error: unknown) => electronLog.error('panel failed to load', error));
    return win;
  }
}
