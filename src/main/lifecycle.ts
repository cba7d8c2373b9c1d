/**
 * What the panel's web contents may never do (the quit and tray rules are ../desktop/lifecycle.ts).
 */
import { app } from 'electron';
import { PANEL_ORIGIN } from '../desktop/panel-protocol.js';

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
