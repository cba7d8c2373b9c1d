/**
 * Helpers for the panel tests: a headless Backchannel in a scratch directory, a minimal Node
 * EventSource, and an in-memory ipcMain/ipcRenderer pair that copies every message like Electron's
 * structured clone does.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHeadless, type Headless, type HeadlessOptions } from '../../src/hub/headless/start.js';
import type { IpcEventLike, IpcMainLike, SenderLike } from '../../src/desktop/ipc-handlers.js';
import type { IpcRendererLike } from '../../src/bridge/ipc-client.js';
import type { EventSourceLike } from '../../src/renderer/http-bridge.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { ANY_COMMAND } from './run-policy.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEMO_AGENT = path.join(ROOT, 'scripts', 'demo-agents', 'agent.mjs');
export const RENDERER_DIR = path.join(ROOT, 'dist', 'renderer');

export interface TestHeadless extends Headless {
  dir: string;
  /** Closes and removes the scratch directory (unless `keep`). */
  stop(options?: { keep?: boolean }): Promise<void>;
}

/** `dist/renderer` must exist (npm run build); tests that only need the API get a stub page. */
function rendererDir(): string {
  if (fs.existsSync(path.join(RENDERER_DIR, 'index.html'))) return RENDERER_DIR;
  const stub = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-renderer-'));
  fs.writeFileSync(path.join(stub, 'index.html'), '<!doctype html><link href="./panel.css?token=__TOKEN__">');
  return stub;
}

export async function startTestHeadless(options: HeadlessOptions & { dir?: string } = {}): Promise<TestHeadless> {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'bc-panel-'));
  const headless = await startHeadless({
    dataDir: path.join(dir, 'data'),
    ipcDir: path.join(dir, 'ipc'),
    rendererDir: rendererDir(),
    consoleLevel: false,
    runPolicy: ANY_COMMAND,
    ...options,
  });
  return {
    ...headless,
    dir,
    async stop({ keep = false } = {}) {
      await headless.close();
      if (!keep) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function origin(headless: Headless): string {
  return `http://127.0.0.1:${headless.server.port}`;
}

/** Just enough of EventSource for the HTTP bridge in Node: GET, parse `data:` lines, close. */
export class NodeEventSource implements EventSourceLike {
  onmessage: ((event: { data: string }) => void) | null = null;
  private request: http.ClientRequest;

  constructor(url: string) {
    this.request = http.get(url, { headers: { Accept: 'text/event-stream' } }, (res) => {
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          if (data) this.onmessage?.({ data });
        }
      });
    });
    this.request.on('error', () => {});
  }

  close(): void {
    this.request.destroy();
  }
}

type Listener = (event: IpcEventLike, ...args: unknown[]) => unknown;

/**
 * An in-memory stand-in for Electron's IPC: `ipcMain` handlers and listeners, and a renderer per
 * `connect()` whose messages carry a sender and frame URL. Arguments and results are cloned.
 */
export class FakeIpc implements IpcMainLike {
  readonly handlers = new Map<string, Listener>();
  readonly listeners = new Map<string, Set<Listener>>();
  private nextId = 1;

  handle(channel: string, listener: Listener): void {
    if (this.handlers.has(channel)) throw new Error(`second handler for ${channel}`);
    this.handlers.set(channel, listener);
  }
  removeHandler(channel: string): void {
    this.handlers.delete(channel);
  }
  on(channel: string, listener: Listener): this {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    return this;
  }
  removeListener(channel: string, listener: Listener): this {
    this.listeners.get(channel)?.delete(listener);
    return this;
  }

  /** A renderer (webContents + its ipcRenderer) showing `frameUrl`. */
  connect(frameUrl: string): FakeRenderer {
    return new FakeRenderer(this, this.nextId++, frameUrl);
  }
}

export class FakeRenderer implements IpcRendererLike {
  private readonly rendererListeners = new Map<string, Set<(event: unknown, ...args: unknown[]) => void>>();
  private readonly destroyedListeners: (() => void)[] = [];
  private destroyed = false;
  readonly sender: SenderLike;

  constructor(
    private readonly ipc: FakeIpc,
    readonly id: number,
    public frameUrl: string,
  ) {
    this.sender = {
      id,
      send: (channel, ...args) => {
        const copy = structuredClone(args);
        queueMicrotask(() => {
          for (const listener of this.rendererListeners.get(channel) ?? []) listener({}, ...copy);
        });
      },
      isDestroyed: () => this.destroyed,
      once: (_event, listener) => this.destroyedListeners.push(listener),
    };
  }

  private event(): IpcEventLike {
    return { sender: this.sender, senderFrame: this.destroyed ? null : { url: this.frameUrl } };
  }

  async invoke(channel: string, ...args: unknown[]): Promise<unknown> {
    const handler = this.ipc.handlers.get(channel);
    if (!handler) throw new Error(`Error invoking remote method '${channel}': No handler registered`);
    return structuredClone(await handler(this.event(), ...structuredClone(args)));
  }
  send(channel: string, ...args: unknown[]): void {
    const copy = structuredClone(args);
    for (const listener of this.ipc.listeners.get(channel) ?? []) listener(this.event(), ...copy);
  }
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): this {
    let set = this.rendererListeners.get(channel);
    if (!set) this.rendererListeners.set(channel, (set = new Set()));
    set.add(listener);
    return this;
  }
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void): this {
    this.rendererListeners.get(channel)?.delete(listener);
    return this;
  }
  listenerCount(channel: string): number {
    return this.rendererListeners.get(channel)?.size ?? 0;
  }
  destroy(): void {
    this.destroyed = true;
    for (const listener of this.destroyedListeners) listener();
  }
}

/** Resolves with the first task snapshot (from a subscription's events) that satisfies `predicate`. */
export function waitForTask(
  subscribe: (listener: (event: { tasks: TaskSnapshot[] }) => void) => () => void,
  predicate: (task: TaskSnapshot) => boolean,
  timeoutMs = 20_000,
): Promise<TaskSnapshot> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`no matching task update within ${timeoutMs} ms`));
    }, timeoutMs);
    const unsubscribe = subscribe((event) => {
      const found = event.tasks.find(predicate);
      if (found) {
        clearTimeout(timer);
        queueMicrotask(() => unsubscribe());
        resolve(found);
      }
    });
  });
}

export function demoRequest(mode: string, extra: string[] = [], label?: string) {
  return { command: DEMO_AGENT, args: [`--mode=${mode}`, ...extra], label: label ?? `${mode} test` };
}
