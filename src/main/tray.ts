/** The tray icon: the light/dark glyph, and the tooltip and menu ../desktop/tray-menu.ts makes, handed to Electron. */
import { Menu, nativeImage, nativeTheme, Tray, type MenuItemConstructorOptions } from 'electron';
import { join } from 'node:path';
import type { TaskSnapshot } from '../model/task.js';
import { trayMenu, type TrayActions, type TrayItem, type TrayView } from '../desktop/tray-menu.js';

export class AppTray implements TrayView {
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
    const { tooltip, items } = trayMenu(tasks, paused, this.actions);
    this.tooltip = tooltip;
    this.tray.setToolTip(tooltip);
    this.menu = Menu.buildFromTemplate(items.map(electronItem));
    this.tray.setContextMenu(this.menu);
  }

  destroy(): void {
    this.tray.destroy();
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

function electronItem({ click, submenu, ...item }: TrayItem): MenuItemConstructorOptions {
  return {
    ...item,
    ...(click ? { click: (menuItem) => click(menuItem.checked) } : {}),
    ...(submenu ? { submenu: submenu.map(electronItem) } : {}),
  };
}
