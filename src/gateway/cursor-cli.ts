/**
 * What the gateway asks the Cursor CLI itself: is it installed (for /health), and which models does
 * it offer (`agent --list-models`, else `agent models`), read with a short deadline and parsed
 * defensively because the output format is not documented.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { killTree } from '../client/index.js';

/** The executable `bin` resolves to (a path, or a name looked up on PATH), or undefined. */
export function findExecutable(bin: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = bin.includes('/')
    ? [path.resolve(bin)]
    : (env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, bin));
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** ANSI colour and cursor sequences (the CLI may decorate its lists). */
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;
/** A model id: starts with a letter or digit, then letters, digits and `.-_:/`. */
const MODEL_ID = /^[A-Za-z0-9][\w.:/-]*$/;

/**
 * Model ids in a model-list output: a JSON list (`["a"]`, `[{id}]`, `{models|data: […]}`) or the
 * CLI's `id - Display Name (current)` lines. When no line has that shape, lines such as `gpt-5` or
 * `* sonnet-4.5` count. Headings (`Available models`), JSON event lines and hints are skipped.
 */
export function parseModelList(output: string): string[] {
  const text = output.replace(ANSI, '').trim();
  const fromJson = parseJsonList(text);
  if (fromJson) return fromJson;
  const lines = text
    .split(/\r?\n/)
    .map((raw) => raw.trim().replace(/^(?:[-*•>]|\d+[.)])\s+/, ''))
    .filter(
      (line) =>
        line !== '' && !line.startsWith('{') && !line.endsWith(':') && !/^(available|tip|note|usage|error|warning|loading)\b/i.test(line),
    );
  const labelled = lines.filter((line) => /^\S+\s+-\s+\S/.test(line));
  const ids: string[] = [];
  for (const line of labelled.length > 0 ? labelled : lines) {
    const first = line.split(/\s+/)[0] ?? '';
    if (MODEL_ID.test(first) && !ids.includes(first)) ids.push(first);
  }
  return ids;
}

function parseJsonList(text: string): string[] | undefined {
  if (!text.startsWith('[') && !text.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined; // NDJSON or not JSON at all
  }
  const list = Array.isArray(value)
    ? value
    : ((value as { models?: unknown; data?: unknown }).models ?? (value as { data?: unknown }).data);
  if (!Array.isArray(list)) return undefined;
  const ids = list
    .map((item) =>
      typeof item === 'string'
        ? item
        : typeof item === 'object' && item !== null
          ? ((item as { id?: unknown; name?: unknown }).id ?? (item as { name?: unknown }).name)
          : undefined,
    )
    .filter((id): id is string => typeof id === 'string' && MODEL_ID.test(id));
  return [...new Set(ids)];
}

/** Runs `bin args`, returns stdout if it exits 0 within `timeoutMs`; kills its group otherwise. */
function capture(bin: string, args: string[], timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    let out = '';
    let settled = false;
    // No colours: some versions decorate ids with ANSI codes when FORCE_COLOR is inherited.
    const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', TERM: 'dumb' };
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'ignore'], detached: process.platform !== 'win32', windowsHide: true });
    const finish = (value: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        if (child.pid !== undefined) killTree(child.pid, 'SIGKILL');
      } catch {
        // Not ours to signal any more (EPERM): nothing left to do.
      }
      resolve(value);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.length > 256 * 1024) finish(undefined); // not a model list
    });
    child.once('error', () => finish(undefined));
    child.once('close', (code) => finish(code === 0 ? out : undefined));
  });
}

/** The CLI's own model ids, or [] when it is missing, fails, is slow, or prints no list. */
export async function listCliModels(bin: string, timeoutMs: number): Promise<string[]> {
  if (!findExecutable(bin)) return [];
  const deadline = Date.now() + timeoutMs;
  for (const args of [['--list-models'], ['models']]) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const output = await capture(bin, args, left);
    const ids = output === undefined ? [] : parseModelList(output);
    if (ids.length > 0) return ids;
  }
  return [];
}

/** Caches the CLI's model list (an empty list only briefly); concurrent callers share one run. */
export class CliModelCache {
  private pending: Promise<string[]> | undefined;
  private expires = 0;

  constructor(
    private readonly bin: string,
    private readonly timeoutMs: number,
    private readonly ttlMs = 5 * 60_000,
    private readonly emptyTtlMs = 10_000,
  ) {}

  get(): Promise<string[]> {
    if (!this.pending || Date.now() > this.expires) {
      this.expires = Number.POSITIVE_INFINITY; // until this run answers
      const run = listCliModels(this.bin, this.timeoutMs);
      this.pending = run;
      void run.then((ids) => {
        if (this.pending === run) this.expires = Date.now() + (ids.length > 0 ? this.ttlMs : this.emptyTtlMs);
      });
    }
    return this.pending;
  }
}
