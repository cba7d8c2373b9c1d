/**
 * The app's lifecycle rules: what the panel's web contents may never do, and how quitting waits
 * for the broker to shut down (cancel running tasks, remove endpoints, flush history) first.
 */
import { app, type Event as ElectronEvent } from 'electron';
import { PANEL_ORIGIN } from './panel-protocol.js';

interface WarnLogger {
  warn(...args: unknown[]): void;
}

/** Denies new windows, navigation away from the panel, and every permission request. */
export function lockDown(logger: WarnLogger): void {
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

export interface QuitSteps {
  /** Runs at once on every quit request (e.g. stop notifying, let the panel close). */
  quitting(): void;
  /** The shutdown the quit waits for; started once. Must not reject (log failures inside). */
  shutdown(): Promise<void>;
  /** Runs after the shutdown, just before the app really quits. */
  done(): void;
}

/** Holds the first quit until `steps.shutdown()` settles, then quits for real. */
export function quitAfterShutdown(steps: QuitSteps): void {
  let shutdown: Promise<void> | undefined;
  let shutdownDone = false;
  app.on('before-quit', (event: ElectronEvent) => {
    steps.quitting();
    if (shutdownDone) return;
    event.preventDefault();
    shutdown ??= steps.shutdown().finally(() => {
      shutdownDone = true;
      steps.done();
      app.quit();
    });
  });
}

/** A tray app keeps running without windows; a second launch or a dock click shows the panel. */
export function keepRunningInTray(showPanel: () => void): void {
  app.on('second-instance', () => showPanel());
  app.on('activate', () => showPanel());
  app.on('window-all-closed', () => {});
}
