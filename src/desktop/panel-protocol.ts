/**
 * The panel is loaded from local files through a private `backchannel://panel/` scheme rather than
 * file://, so it has a real origin (the IPC handlers check it) and every response carries the
 * strict Content-Security-Policy as a header. The files are served by the same `PanelFiles` as
 * the headless server.
 */
import { PanelFiles } from '../hub/http/static-files.js';

export const PANEL_SCHEME = 'backchannel';
export const PANEL_ORIGIN = `${PANEL_SCHEME}://panel`;
export const PANEL_URL = `${PANEL_ORIGIN}/index.html`;

/** A request handler serving only the files present in `rendererDir` at start (no path ever reaches the disk). */
export function panelRequestHandler(rendererDir: string): (request: Request) => Response {
  const files = PanelFiles.load(rendererDir);
  return (request) => {
    const url = new URL(request.url);
    const file = url.host === 'panel' ? files.get(url.pathname) : undefined;
    if (!file) return new Response('not found', { status: 404 });
    return new Response(file.body, { headers: file.headers });
  };
}
