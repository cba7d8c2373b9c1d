/**
 * The app's lifecycle rules that need no Electron import (the app is typed structurally): quitting waits for the hub
 * to shut down (cancel running tasks, remove endpoints, flush history) first, and a tray app keeps running without
 * windows.
 */

/** What these rules use of Electron's `app`. */
export interface AppLike {
  on(event: 'before-quit', listener: (event: { preventDefault(): void }) => void): unknown;
  on(event: 'second-instance' | 'activate' | 'window-all-closed', listener: () => void): unknown;
  quit(): void;
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
export function quitAfterShutdown(app: AppLike, steps: QuitSteps): void {
  let shutdown: Promise<void> | undefined;
  let shutdownDone = false;
  app.on('before-quit', (event) => {
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
export function keepRunningInTray(app: AppLike, showPanel: () => void): void {
  app.on('second-instance', () => showPanel());
  app.on('activate', () => showPanel());
  app.on('window-all-closed', () => {});
}
