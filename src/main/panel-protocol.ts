/**
 * The panel is loaded from local files through a private `backchannel://panel/` scheme rather than
 * file://, so it has a real origin (the IPC handlers check it) and every response carries the
 * strict Content-Security-Policy as a header.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { CONTENT_SECURITY_POLICY } from '../hosts/http/security.js';

export const PANEL_SCHEME = 'backchannel';
export const PANEL_ORIGIN = `${PANEL_SCHEME}://panel`;
export const PANEL_URL = `${PANEL_ORIGIN}/index.html`;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.map': 'application/json',
};

/** A request handler serving only the files present in `rendererDir` at start (no path ever reaches the disk). */
export function panelRequestHandler(rendererDir: string): (request: Request) => Response {
  const files = new Map<string, Buffer>();
  for (const name of readdirSync(rendererDir)) {
    if (TYPES[extname(name)]) files.set(name, readFileSync(join(rendererDir, name)));
  }
  return (request) => {
    const url = new URL(request.url);
    const name = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
    const file = url.host === 'panel' ? files.get(name) : undefined;
    if (!file) return new Response('not found', { status: 404 });
    // index.html refers to its assets with a `?token=__TOKEN__` query for the headless server; unused here.
    const body = name === 'index.html' ? file.toString('utf8').replaceAll('?token=__TOKEN__', '') : file;
    return new Response(body, {
      headers: {
        'Content-Type': TYPES[extname(name)] ?? 'application/octet-stream',
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'X-Content-Type-Options': 'nosniff',
      },
    });
  };
}
