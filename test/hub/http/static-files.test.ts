/** The built panel's files: read once, served by name only, with the token and the CSP. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { PanelFiles } from '../../../src/hub/http/static-files.js';
import { tempDir } from '../../helpers/core.js';

function panelDir(): string {
  const dir = tempDir('bc-static-');
  fs.writeFileSync(path.join(dir, 'index.html'), '<script src="./panel.js?token=__TOKEN__"></script>');
  fs.writeFileSync(path.join(dir, 'panel.js'), 'console.log(1)');
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not served');
  return dir;
}

describe('PanelFiles', () => {
  test('"/" is index.html with the token written into its asset URLs, or the query dropped without a token', () => {
    const files = PanelFiles.load(panelDir());
    expect(files.get('/', 'abc123')?.body.toString()).toBe('<script src="./panel.js?token=abc123"></script>');
    expect(files.get('/index.html')?.body.toString()).toBe('<script src="./panel.js"></script>');
  });

  test('every file carries its content type, length, no-store and the CSP', () => {
    const file = PanelFiles.load(panelDir()).get('/panel.js')!;
    expect(file.headers).toMatchObject({
      'Content-Type': 'text/javascript; charset=utf-8',
      'Content-Length': String(file.body.length),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    expect(file.headers['Content-Security-Policy']).toContain("script-src 'self'");
  });

  test('only files of a known type that existed at load are served; no path leaves the directory', () => {
    const dir = panelDir();
    const files = PanelFiles.load(dir);
    fs.writeFileSync(path.join(dir, 'later.js'), 'x');
    for (const pathname of ['/notes.txt', '/later.js', '/../package.json', '/%2e%2e/package.json', '/sub/panel.js']) {
      expect(files.get(pathname), pathname).toBeUndefined();
    }
  });

  test('a missing or unbuilt panel directory says to build it', () => {
    const empty = tempDir('bc-static-');
    expect(() => PanelFiles.load(path.join(empty, 'nope'))).toThrow(/not built .*npm run build/);
    expect(() => PanelFiles.load(empty)).toThrow(/has no index.html/);
  });
});
