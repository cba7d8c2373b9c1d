/**
 * Runs the real `backchannel serve` as a child process for the browser tests, and talks to its API
 * with the printed token (to set up tasks faster than through the UI).
 */
import { expect } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const AGENT = path.join(ROOT, 'scripts', 'demo-agents', 'agent.mjs');
export const TICKER = path.join(ROOT, 'test', 'e2e', 'fixtures', 'ticker.sh');

export interface Serve {
  url: string;
  origin: string;
  token: string;
  dataDir: string;
  child: ChildProcess;
  api<T = unknown>(method: string, route: string, body?: unknown): Promise<T>;
  submit(mode: string, args?: string[], extra?: Record<string, unknown>): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function scratchDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'bc-e2e-'));
}

/**
 * A config file whose run policy allows any command line: the specs submit test agents with their
 * own arguments through the panel's API, which the owner's default policy refuses (docs/run-policy.md).
 */
function anyCommandConfig(): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bc-e2e-config-')), 'config.yaml');
  fs.writeFileSync(file, 'run_policy:\n  allow:\n    - command: "*"\n');
  return file;
}

/** `env` goes on top (a spec about the run policy points BACKCHANNEL_CONFIG at the owner's defaults). */
export async function startServe(dataDir: string, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Serve> {
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'backchannel.js'), 'serve', '--port', '0', '--data-dir', dataDir, ...extraArgs],
    {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(dataDir, '..', 'ipc'), BACKCHANNEL_CONFIG: anyCommandConfig(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    // Generous: on a busy machine (the browser suite runs beside vitest) serve can take long to start.
    const timer = setTimeout(() => reject(new Error(`serve printed no URL within 60 s; stderr: ${stderr}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Backchannel panel: (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  const parsed = new URL(url);
  const token = parsed.searchParams.get('token')!;
  const origin = parsed.origin;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  /** One fresh connection per call (no keep-alive), so a server closing an idle socket cannot reset a request. */
  function api<T>(method: string, route: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      const req = http.request(
        origin + route,
        {
          method,
          agent: false,
          headers: { 'x-backchannel-token': token, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            if ((res.statusCode ?? 500) >= 400) reject(new Error(`${method} ${route} → ${res.statusCode} ${text}`));
            else resolve((text ? JSON.parse(text) : undefined) as T);
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  return {
    url,
    origin,
    token,
    dataDir,
    child,
    api,
    async submit(mode, args = [], extra = {}) {
      const command = mode === 'ticker' ? TICKER : AGENT;
      const fullArgs = mode === 'ticker' ? args : [`--mode=${mode}`, ...args];
      const { id } = await api<{ id: string }>('POST', '/api/tasks', { command, args: fullArgs, label: `${mode} task`, ...extra });
      return id;
    },
    async stop(signal = 'SIGINT') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** A coding task once it succeeded and its change is recorded, read over the API (polled, 30 s). */
export async function waitForChange<T extends { state: string; change?: unknown }>(serve: Serve, id: string): Promise<T> {
  let task: T | undefined;
  await expect
    .poll(
      async () => {
        task = (await serve.api<{ task: T }>('GET', `/api/tasks/${id}`)).task;
        return `${task.state}:${task.change ? 'change' : ''}`;
      },
      { timeout: 30_000 },
    )
    .toBe('succeeded:change');
  return task!;
}
