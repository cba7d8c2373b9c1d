/**
 * Copies a template into a new project directory: the template's own files, then its vendored files
 * (template.json `vendor`), with the relative imports that reached them in the package rewritten to
 * their place in the project. In the package the template imports e.g. `../_shared/run-headless.mjs`
 * (so it runs in place, one source); the project gets `./run-headless.mjs` and runs on its own.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot, TemplateError, type Template, type VendorEntry } from './catalog.js';

/** Never copied: caches and installs that may sit in a template directory during development. */
const SKIP = new Set(['node_modules', '__pycache__', '.pytest_cache', '.DS_Store']);
/** Files whose relative imports of vendored paths are rewritten. */
const SOURCE_FILE = /\.(mjs|cjs|js|mts|cts|ts|py)$/;

const keep = (source: string) => !SKIP.has(path.basename(source));

/** Copies `template` into `target` (created if missing) with its vendored files. `root`: what `vendor[].from` is relative to. */
export function scaffoldTemplate(template: Template, target: string, root: string = packageRoot()): void {
  const vendor = template.vendor ?? [];
  for (const entry of vendor) {
    if (!existsSync(path.resolve(root, entry.from))) {
      throw new TemplateError(`the ${template.name} template vendors "${entry.from}", which is missing from ${root}`);
    }
  }
  mkdirSync(target, { recursive: true });
  cpSync(template.dir, target, { recursive: true, filter: keep });
  for (const entry of vendor) cpSync(path.resolve(root, entry.from), path.join(target, entry.to), { recursive: true, filter: keep });
  if (vendor.length > 0) rewriteImports(template.dir, target, vendor, root);
}

/** In every source file copied from `sourceDir`, points relative specifiers of vendored paths at their copies. */
function rewriteImports(sourceDir: string, target: string, vendor: VendorEntry[], root: string): void {
  for (const file of sourceFiles(sourceDir)) {
    const copy = path.join(target, path.relative(sourceDir, file));
    const text = readFileSync(copy, 'utf8');
    let rewritten = text;
    for (const entry of vendor) {
      const before = specifier(path.dirname(file), path.resolve(root, entry.from));
      const after = specifier(path.dirname(copy), path.join(target, entry.to));
      // The whole specifier, or a path under it (a vendored directory): `'../_shared/x.mjs'`, `"../_shared"`.
      const pattern = new RegExp(`(['"\`])${escapeRegExp(before)}(?=['"\`/])`, 'g');
      rewritten = rewritten.replace(pattern, (_match, quote: string) => `${quote}${after}`);
    }
    if (rewritten !== text) writeFileSync(copy, rewritten);
  }
}

/** A relative import specifier from `fromDir` to `to`: POSIX separators, `./` or `../` first. */
function specifier(fromDir: string, to: string): string {
  const relative = path.relative(fromDir, to).split(path.sep).join('/');
  return relative.startsWith('../') ? relative : `./${relative}`;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(file);
    else if (SOURCE_FILE.test(entry.name)) yield file;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
