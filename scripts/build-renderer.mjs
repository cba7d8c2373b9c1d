#!/usr/bin/env node
// Builds what tsc does not: the panel (src/renderer → dist/renderer: index.html, panel.js, panel.css)
// and the Electron preload as one CommonJS file (a sandboxed preload can only require 'electron').
// Run after `tsc -p tsconfig.json` (see the `build` script).
import { build } from 'esbuild';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src', 'renderer');
const out = join(root, 'dist', 'renderer');

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });

/** One browser bundle of the panel's (an IIFE for the strict CSP: no modules, no eval). */
const browserBundle = (entry, file) =>
  build({
    entryPoints: [join(src, entry)],
    outfile: join(out, file),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome120'],
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
  });

// The first paint's requests, sent before panel.js has loaded (src/renderer/first-calls.ts).
await browserBundle('boot.ts', 'boot.js');
await browserBundle('panel.ts', 'panel.js');
// Insights, Schedules and the dialogs, loaded after the first paint (src/renderer/lazy-views.ts).
await browserBundle('views-entry.ts', 'views.js');
// The chart library on its own, loaded when Insights first draws (src/renderer/uplot-entry.ts).
await browserBundle('uplot-entry.ts', 'uplot.js');
await copyFile(join(src, 'index.html'), join(out, 'index.html'));
await copyFile(join(src, 'panel.css'), join(out, 'panel.css'));
await copyFile(join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css'), join(out, 'uPlot.min.css'));

const preload = join(root, 'src', 'preload', 'index.ts');
if (existsSync(preload)) {
  await build({
    entryPoints: [preload],
    outfile: join(root, 'dist', 'preload', 'index.cjs'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: ['node20'],
    external: ['electron'],
    logLevel: 'warning',
  });
}
console.log('built dist/renderer' + (existsSync(preload) ? ' and dist/preload/index.cjs' : ''));
