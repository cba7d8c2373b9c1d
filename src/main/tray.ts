/**
 * The tray icon: light/dark icon, a tooltip with counts ("2 running, 1 failed") and a context menu
 * that reaches everything, because many Linux trays never deliver clicks.
 */
import { Menu, nativeImage, nativeTheme, Tray, type MenuItemConstructorOptions } from 'electron';
import { join } from 'node:path';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { countsText } from '../bridge/summary.js';

export interface TrayActions {
  openPanel(): void;
  togglePanel?(): void;
  openTask(id: string): void;
  setPaused(paused: boolean): void;
  openLog(): void;
  quit(): void;
}

/** Recent tasks listed in the menu. */
const RECENT_IN_MENU = 8;
/** Tray menu and tooltip refresh at most this often (menus are rebuilt from scratch). */
const TRAY_REFRESH_MS = 1000;

const STATE_MARK: Record<TaskSnapshot['state'], string> = {
  queued: '…',
  running: '▶',
  retrying: '↻',
  succeeded: '✓',
  failed: '✗',
  cancelled: '⊘',
  interrupted: '!',
};

export class AppTray {
  readonly tray: Tray;
  /** What the tray shows now (Electron has no getters for these; the Electron test reads them). */
  tooltip = 'Backchannel';
  menu: Menu | undefined;

  constructor(
    private readonly assetsDir: string,
    private readonly actions: TrayActions,
  ) {
    this.tray = new Tray(this.icon());
    this.tray.setToolTip('Backchannel');
    // Where the tray delivers clicks (macOS, Windows, some Linux trays), a click toggles the panel.
    this.tray.on('click', () => (actions.togglePanel ?? actions.openPanel)());
    nativeTheme.on('updated', () => this.tray.setImage(this.icon()));
  }

  /** Icon for the current theme: a dark glyph on light bars, a light glyph on dark ones; a template image on macOS. */
  private icon(): Electron.NativeImage {
    if (process.platform === 'darwin') {
      const image = nativeImage.createFromPath(join(this.assetsDir, 'trayTemplate.png'));
      image.setTemplateImage(true);
      return image;
    }
    return nativeImage.createFromPath(join(this.assetsDir, nativeTheme.shouldUseDarkColors ? 'tray-dark.png' : 'tray-light.png'));
  }

  /** Refreshes tooltip and menu; `setContextMenu` again, since some Linux trays copy the menu once. */
  update(tasks: TaskSnapshot[], paused: boolean): void {
    const counts = countsText(tasks);
    this.tooltip = `Backchannel — ${counts}${paused ? ' (paused)' : ''}`;
    this.tray.setToolTip(this.tooltip);
    const recent = [...tasks]
      .sort((a, b) => (b.startedAt ?? b.createdAt).localeCompare(a.startedAt ?? a.createdAt))
      .slice(0, RECENT_IN_MENU);
    const template: MenuItemConstructorOptions[] = [
      { label: 'Open panel', click: () => this.actions.openPanel() },
      { label: counts, enabled: false },
      { type: 'separator' },
      {
        label: 'Recent tasks',
        submenu: recent.length
          ? recent.map((task) => ({
              label: `${STATE_MARK[task.state]} ${truncate(task.label, 48)}${isFinished(task.state) ? '' : ` (${task.state})`}`,
              click: () => this.actions.openTask(task.id),
            }))
          : [{ label: 'No tasks yet', enabled: false }],
      },
      { label: 'Pause queue', type: 'checkbox', checked: paused, click: (item) => this.actions.setPaused(item.checked) },
      { label: 'Open log file', click: () => this.actions.openLog() },
      { type: 'separator' },
      { label: 'Quit Backchannel', click: () => this.actions.quit() },
    ];
    this.menu = Menu.buildFromTemplate(template);
    this.tray.setContextMenu(this.menu);
  }

  /** Labels of the menu, submenus as `Parent > Child` (for the test hooks). */
  menuLabels(): string[] {
    const walk = (menu: Menu | null | undefined, prefix: string): string[] =>
      (menu?.items ?? []).flatMap((item) =>
        item.type === 'separator' ? [] : [prefix + item.label, ...walk(item.submenu, `${prefix}${item.label} > `)],
      );
    return walk(this.menu, '');
  }

  /** Clicks a menu item by label, as a person would (for the test hooks). */
  clickMenuItem(label: string): boolean {
    const item = this.menu?.items.find((candidate) => candidate.label === label);
    item?.click();
    return item !== undefined;
  }
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** What the tray shows, read when it refreshes. */
export interface TraySource {
  tasks(): TaskSnapshot[];
  readonly paused: boolean;
}

/** Keeps the tray up to date without rebuilding its menu for every update: at most one refresh per second. */
export class TrayController {
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly view: AppTray,
    private readonly source: TraySource,
  ) {}

  /** Something changed: refresh within `TRAY_REFRESH_MS` (once, however many changes come). */
  changed(): void {
    this.#timer ??= setTimeout(() => this.refresh(), TRAY_REFRESH_MS);
  }

  /** Refreshes now. */
  refresh(): void {
    this.#timer = undefined;
    this.view.update(this.source.tasks(), this.source.paused);
  }

  /** Stops refreshing and removes the icon. */
  destroy(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.view.tray.destroy();
  }
}
