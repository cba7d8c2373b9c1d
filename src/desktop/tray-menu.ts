/**
 * What the tray shows, without Electron: the tooltip with counts ("2 running, 1 failed") and a menu that reaches
 * everything (many Linux trays never deliver clicks), as plain items ../main/tray.ts hands to Electron's Menu; and
 * the controller that refreshes it at most once a second however many updates come.
 */
import { countsText } from '../bridge/summary.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';

export interface TrayActions {
  openPanel(): void;
  togglePanel?(): void;
  openTask(id: string): void;
  setPaused(paused: boolean): void;
  openLog(): void;
  quit(): void;
}

/** One menu item; `click` gets a checkbox's new state. */
export interface TrayItem {
  label?: string;
  type?: 'separator' | 'checkbox';
  enabled?: boolean;
  checked?: boolean;
  click?: (checked: boolean) => void;
  submenu?: TrayItem[];
}

/** Recent tasks listed in the menu. */
const RECENT_IN_MENU = 8;
/** Tray menu and tooltip refresh at most this often (menus are rebuilt from scratch). */
export const TRAY_REFRESH_MS = 1000;

const STATE_MARK: Record<TaskSnapshot['state'], string> = {
  queued: '…',
  running: '▶',
  retrying: '↻',
  succeeded: '✓',
  failed: '✗',
  cancelled: '⊘',
  interrupted: '!',
};

/** The tooltip and the menu for these tasks. */
export function trayMenu(tasks: readonly TaskSnapshot[], paused: boolean, actions: TrayActions): { tooltip: string; items: TrayItem[] } {
  const counts = countsText([...tasks]);
  const recent = [...tasks].sort((a, b) => (b.startedAt ?? b.createdAt).localeCompare(a.startedAt ?? a.createdAt)).slice(0, RECENT_IN_MENU);
  const items: TrayItem[] = [
    { label: 'Open panel', click: () => actions.openPanel() },
    { label: counts, enabled: false },
    { type: 'separator' },
    {
      label: 'Recent tasks',
      submenu: recent.length
        ? recent.map((task) => ({
            label: `${STATE_MARK[task.state]} ${truncate(task.label, 48)}${isFinished(task.state) ? '' : ` (${task.state})`}`,
            click: () => actions.openTask(task.id),
          }))
        : [{ label: 'No tasks yet', enabled: false }],
    },
    { label: 'Pause queue', type: 'checkbox', checked: paused, click: (checked) => actions.setPaused(checked) },
    { label: 'Open log file', click: () => actions.openLog() },
    { type: 'separator' },
    { label: 'Quit Backchannel', click: () => actions.quit() },
  ];
  return { tooltip: `Backchannel — ${counts}${paused ? ' (paused)' : ''}`, items };
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** What the tray shows, read when it refreshes. */
export interface TraySource {
  tasks(): TaskSnapshot[];
  readonly paused: boolean;
}

/** The tray icon itself (../main/tray.ts). */
export interface TrayView {
  update(tasks: TaskSnapshot[], paused: boolean): void;
  destroy(): void;
}

/** Keeps the tray up to date without rebuilding its menu for every update: at most one refresh per second. */
export class TrayController {
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly view: TrayView,
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
    this.view.destroy();
  }
}
