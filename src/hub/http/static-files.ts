/**
 * The built panel as static files, served the same way by both hosts: the headless HTTP server and
 * the Electron `backchannel://panel/` protocol. The files are read once at start, so the set of
 * servable files is fixed and no request path ever reaches the file system (path confinement by
 * construction); every file goes out with its content type and the strict Content-Security-Policy.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTENT_SECURITY_POLICY } from '../../loopback/security.js';

/** The built panel (dist/renderer), two levels up from this file's dist/hub/http. */
export function defaultRendererDir(): string {
  return fileURLToPath(new URL('../../renderer/', import.meta.url));
}

/** The only kinds of file served; anything else in the directory is ignored. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** index.html refers to its assets with this query for the headless server's token. */
const TOKEN_PLACEHOLDER = '__TOKEN__';

export interface StaticFile {
  body: Buffer;
  /** Content type, length, no caching, CSP and nosniff. */
  headers: Record<string, string>;
}

export class PanelFiles {
  private constructor(private readonly files: ReadonlyMap<string, Buffer>) {}

  /** Reads the built panel in `dir`; throws a message that says to build it when it is missing. */
  static load(dir: string): PanelFiles {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      throw new Error(`The panel is not built (${dir} is missing): run \`npm run build\` first`, { cause: error });
    }
    if (!names.includes('index.html')) throw new Error(`The panel is not built (${dir} has no index.html): run \`npm run build\``);
    const files = new Map<string, Buffer>();
    for (const name of names) {
      if (CONTENT_TYPES[extname(name)]) files.set(name, readFileSync(join(dir, name)));
    }
    return new PanelFiles(files);
  }

  /**
   * The file a URL path names (`/` is index.html), or undefined. With a `token`, index.html's asset
   * URLs carry it (hex only, so safe in HTML); without one, the `?token=` query is dropped.
   */
  get(pathname: string, token?: string): StaticFile | undefined {
    const name = pathname === '/' ? 'index.html' : pathname.slice(1);
    const file = this.files.get(name);
    if (!file) return undefined;
    const body = name === 'index.html' ? withToken(file, token) : file;
    return {
      body,
      headers: {
        'Content-Type': CONTENT_TYPES[extname(name)] ?? 'application/octet-stream',
        'Content-Length': String(body.length),
        'Cache-Control': 'no-store',
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'X-Content-Type-Options': 'nosniff',
      },
    };
  }
}

function withToken(page: Buffer, token: string | undefined): Buffer {
  const text = page.toString('utf8');
  return Buffer.from(token === undefined ? text.replaceAll(`?token=${TOKEN_PLACEHOLDER}`, '') : text.replaceAll(TOKEN_PLACEHOLDER, token));
}
