/**
 * The Electron shell's main process against a stand-in `electron` module (the real binary is not
 * installed here; test/e2e/electron.spec.ts covers it where it is). This runs the real main.ts:
 * broker, IPC handlers, tray menu, panel window options, the panel protocol, notifications and
 * the quit path.
 */
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { createIpcBridge } from '../../src/bridge/ipc-client.js';
import { readLockHolder } from '../../src/broker/history/data-dir-lock.js';
import { connectHub } from '../../src/client/hub-client.js';
import type { BackchannelBridge } from '../../src/bridge/contract.js';
import { ROOT, waitFor, waitUntilGone } from '../helpers/core.js';
import { DEMO_AGENT, waitForTask, type FakeIpc } from '../helpers/panel.js';
import { anyCommandConfig } from '../helpers/run-policy.js';
import { Webhook as SvixWebhook } from 'svix';

const ASKER = path.join(ROOT, 'test', 'fixtures', 'asker.mjs');

/** A notification the app showed: its options, and its handlers by event ('click', 'action', 'reply'). */
interface FakeNotification {
  title: string;
  body: string;
  options: Record<string, unknown>;
  handlers: Map<string, (...args: unknown[]) => void>;
}

interface Fake {
  ipc: FakeIpc;
  windows: { options: Record<string, unknown>; urls: string[]; webContents: { id: number }; shown: boolean }[];
  notifications: FakeNotification[];
  protocolHandlers: Map<string, (request: Request) => Response | Promise<Response>>;
  appHandlers: Map<string, ((...args: unknown[]) => void)[]>;
  trayDestroyed: boolean;
  quits: number;
}

vi.mock('electron', async () => {
  const { FakeIpc } = await import('../helpers/panel.js');
  const fake: Fake = {
    ipc: new FakeIpc(),
    windows: [],
    notifications: [],
    protocolHandlers: new Map(),
    appHandlers: new Map(),
    trayDestroyed: false,
    quits: 0,
  };
  (globalThis as Record<string, unknown>).__fakeElectron = fake;
  let nextId = 100;
  const emit = (event: string, ...args: unknown[]): void => {
    for (const handler of fake.appHandlers.get(event) ?? []) handler(...args);
  };
  const app = {
    isPackaged: false,
    paths: new Map<string, string>(),
    setPath(name: string, value: string) {
      this.paths.set(name, value);
    },
    getPath(name: string) {
      return this.paths.get(name) ?? os.tmpdir();
    },
    getVersion: () => '0.1.0-test',
    requestSingleInstanceLock: () => true,
    whenReady: () => Promise.resolve(),
    on(event: string, handler: (...args: unknown[]) => void) {
      fake.appHandlers.set(event, [...(fake.appHandlers.get(event) ?? []), handler]);
      return this;
    },
    quit() {
      fake.quits++;
      let prevented = false;
      emit('before-quit', { preventDefault: () => (prevented = true) });
      if (!prevented) emit('will-quit');
    },
    dock: undefined,
  };
  class BrowserWindow {
    record: Fake['windows'][number];
    webContents: { id: number; isDevToolsOpened(): boolean };
    private destroyed = false;
    constructor(options: Record<string, unknown>) {
      this.webContents = { id: nextId++, isDevToolsOpened: () => false };
      this.record = { options, urls: [], webContents: this.webContents, shown: false };
      fake.windows.push(this.record);
    }
    loadURL(url: string) {
      this.record.urls.push(url);
      return Promise.resolve();
    }
    on() {
      return this;
    }
    setMenuBarVisibility() {}
    setBounds() {}
    center() {}
    setSkipTaskbar() {}
    isVisible() {
      return this.record.shown;
    }
    isDestroyed() {
      return this.destroyed;
    }
    show() {
      this.record.shown = true;
    }
    hide() {
      this.record.shown = false;
    }
    focus() {}
  }
  class Notification {
    static isSupported = () => true;
    record: FakeNotification;
    constructor(options: { title: string; body: string }) {
      this.record = { title: options.title, body: options.body, options, handlers: new Map() };
    }
    on(event: string, handler: (...args: unknown[]) => void) {
      this.record.handlers.set(event, handler);
    }
    show() {
      fake.notifications.push(this.record);
    }
  }
  class Tray {
    constructor(_image: unknown) {}
    setToolTip() {}
    setImage() {}
    setContextMenu() {}
    on() {}
    getBounds() {
      return { x: 0, y: 0, width: 0, height: 0 };
    }
    destroy() {
      fake.trayDestroyed = true;
    }
  }
  type Item = { label?: string; type?: string; click?: (item: Item) => void; submenu?: unknown; checked?: boolean };
  const Menu = {
    buildFromTemplate(template: Item[]): { items: Item[] } {
      return {
        items: template.map((item) => {
          const built: Item = {
            ...item,
            submenu: Array.isArray(item.submenu) ? Menu.buildFromTemplate(item.submenu as Item[]) : undefined,
          };
          built.click = () => {
            // Like Electron: a checkbox item flips before its click handler runs.
            if (built.type === 'checkbox') built.checked = !built.checked;
            item.click?.(built);
          };
          return built;
        }),
      };
    },
  };
  return {
    app,
    BrowserWindow,
    ipcMain: fake.ipc,
    Notification,
    Tray,
    Menu,
    protocol: {
      registerSchemesAsPrivileged() {},
      handle(scheme: string, handler: (request: Request) => Response) {
        fake.protocolHandlers.set(scheme, handler);
      },
    },
    screen: { getDisplayNearestPoint: () => ({ workArea: { x: 0, y: 0, width: 1920, height: 1080 } }) },
    shell: { openPath: async () => '' },
    nativeImage: { createFromPath: () => ({ setTemplateImage() {} }) },
    nativeTheme: { shouldUseDarkColors: false, on() {} },
  };
});

vi.mock('electron-log/main.js', () => {
  const noop = (): void => {};
  const scoped = { error: noop, warn: noop, info: noop, debug: noop };
  return {
    default: {
      initialize: noop,
      transports: { file: { level: 'info', getFile: () => ({ path: '/tmp/backchannel-test/main.log' }) }, console: { level: 'warn' } },
      scope: () => scoped,
      error: noop,
    },
  };
});

type Hooks = {
  tray(): { tooltip: string; menu: string[] };
  clickMenuItem(label: string): boolean;
  webPreferences(): Record<string, unknown>;
};

let userData: string;
let fake: Fake;
let hooks: Hooks;
let bridge: BackchannelBridge;
/** The config's webhook receiver: what it got (headers and body). */
let receiver: Server;
const received: { headers: Record<string, string>; body: string }[] = [];
const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

async function startReceiver(): Promise<number> {
  receiver = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return (receiver.address() as AddressInfo).port;
}

beforeAll(async () => {
  userData = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-electron-'));
  process.env.BACKCHANNEL_USER_DATA = userData;
  process.env.BACKCHANNEL_TEST_HOOKS = '1';
  process.env.CURSOR_IPC_DIR = path.join(userData, 'ipc');
  // The panel's New task submits demo agents with their own arguments (docs/run-policy.md).
  process.env.BACKCHANNEL_CONFIG = anyCommandConfig(userData);
  // …and a webhook, which the app sends like `serve` (docs/notifications.md).
  const port = await startReceiver();
  fs.appendFileSync(
    process.env.BACKCHANNEL_CONFIG,
    `notify:\n  webhooks:\n    - { url: "http://127.0.0.1:${port}/hook", events: [ended, schedule_skipped], secret: ${WEBHOOK_SECRET} }\n`,
  );
  await import('../../src/main/main.js');
  fake = (globalThis as unknown as { __fakeElectron: Fake }).__fakeElectron;
  const started = (): Hooks | undefined => (globalThis as unknown as { __backchannelTest?: Hooks }).__backchannelTest;
  await waitFor(() => started() !== undefined, 'the shell to start', 20_000);
  hooks = started()!;
});

afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  delete process.env.BACKCHANNEL_USER_DATA;
  delete process.env.BACKCHANNEL_TEST_HOOKS;
  delete process.env.CURSOR_IPC_DIR;
  delete process.env.BACKCHANNEL_CONFIG;
  fs.rmSync(userData, { recursive: true, force: true });
});

describe('the Electron shell (stand-in Electron)', () => {
  test('the tray menu reaches everything', () => {
    expect(hooks.tray().menu).toEqual(
      expect.arrayContaining([
        'Open panel',
        'Idle',
        'Recent tasks',
        'Recent tasks > No tasks yet',
        'Pause queue',
        'Open log file',
        'Quit Backchannel',
      ]),
    );
  });

  test('"Open panel" opens a sandboxed window on the private scheme, as a normal window where the tray position is unknown', () => {
    expect(hooks.clickMenuItem('Open panel')).toBe(true);
    const win = fake.windows[0]!;
    expect(win.shown).toBe(true);
    expect(win.urls).toEqual(['backchannel://panel/index.html']);
    expect(win.options.webPreferences).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false });
    expect(String((win.options.webPreferences as Record<string, unknown>).preload)).toMatch(/preload\/index\.cjs$/);
  });

  test('the panel scheme serves the page with the CSP header and nothing outside it', async () => {
    const handler = fake.protocolHandlers.get('backchannel')!;
    const page = await handler(new Request('backchannel://panel/index.html'));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).not.toContain('__TOKEN__');
    for (const url of [
      'backchannel://panel/../../package.json',
      'backchannel://panel/%2e%2e/package.json',
      'backchannel://other/index.html',
    ]) {
      expect((await handler(new Request(url))).status, url).toBe(404);
    }
  });

  test('the panel window (and only it) gets answers over IPC, and a finished task notifies and shows in the tray', async () => {
    const win = fake.windows[0]!;
    const stranger = fake.ipc.connect('backchannel://panel/index.html');
    await expect(createIpcBridge(stranger).info()).rejects.toMatchObject({ code: 'invalid_request' });

    const panel = fake.ipc.connect('backchannel://panel/index.html');
    Object.defineProperty(panel, 'id', { value: win.webContents.id });
    Object.defineProperty(panel.sender, 'id', { value: win.webContents.id });
    bridge = createIpcBridge(panel);
    expect(await bridge.info()).toMatchObject({ mode: 'electron', version: '0.1.0-test', logPath: '/tmp/backchannel-test/main.log' });
    expect((await bridge.info()).presets.length).toBeGreaterThan(0);

    const { id } = await bridge.submit({
      command: DEMO_AGENT,
      args: ['--mode=progress', '--steps=2', '--interval=20'],
      label: 'from the panel',
    });
    await waitForTask(bridge.subscribe, (task) => task.id === id && task.state === 'succeeded');
    const done = (): Fake['notifications'][number] | undefined => fake.notifications.find((n) => n.title === 'Succeeded: from the panel');
    await waitFor(() => done() !== undefined, 'the notification', 20_000);
    const note = done()!;
    note.handlers.get('click')!();
    expect(win.urls.at(-1)).toBe(`backchannel://panel/index.html#task=${id}`);
    await waitFor(() => hooks.tray().menu.includes('Recent tasks > ✓ from the panel'), 'the tray menu to list the task', 20_000);
  });

  test('the config’s webhooks are sent by the app too: the ended event arrives signed (svix verifies it)', async () => {
    const { id } = await bridge.submit({ command: DEMO_AGENT, args: ['--mode=progress', '--steps=1', '--interval=10'], label: 'hooked' });
    const ended = await waitFor(
      () => received.find((message) => (JSON.parse(message.body) as { data: { task: { id: string } } }).data.task.id === id),
      'the webhook',
      20_000,
    );
    new SvixWebhook(WEBHOOK_SECRET).verify(ended.body, ended.headers);
    expect(JSON.parse(ended.body)).toMatchObject({ type: 'ended', data: { task: { label: 'hooked', state: 'succeeded' } } });
  });

  test('a skipped schedule fire is sent as a schedule_skipped webhook, as serve sends it', async () => {
    await bridge.addSchedule({ name: 'app-tick', everyMs: 1000, preset: 'progress', paused: true });
    const skipped = await waitFor(
      () => received.find((message) => (JSON.parse(message.body) as { type: string }).type === 'schedule_skipped'),
      'the schedule_skipped webhook',
      20_000,
    );
    new SvixWebhook(WEBHOOK_SECRET).verify(skipped.body, skipped.headers);
    expect(JSON.parse(skipped.body)).toMatchObject({ data: { schedule: { schedule: 'app-tick', reason: 'paused' } } });
    await bridge.removeSchedule('app-tick');
  });

  test('the data directory’s lock names the app’s control endpoint, where a client finds it', async () => {
    const dataDir = path.join(userData, 'state');
    const control = (await readLockHolder(dataDir))?.control;
    expect(control).toBe(path.join(dataDir, 'control.sock'));
    const hub = connectHub(control!);
    try {
      expect(await hub.info()).toMatchObject({ mode: 'electron' });
    } finally {
      hub.close();
    }
  });

  test('a question from a sub-agent raises a notification that opens its task', async () => {
    const { id } = await bridge.submit({ command: DEMO_AGENT, args: ['--mode=ask'], label: 'curious agent' });
    const asking = await waitForTask(bridge.subscribe, (task) => task.id === id && task.pendingQuestion !== undefined);
    const question = (): Fake['notifications'][number] | undefined =>
      fake.notifications.find((n) => n.title === 'Needs an answer: curious agent');
    await waitFor(() => question() !== undefined, 'the question notification', 20_000);
    const note = question()!;
    expect(note.body).toBe(asking.pendingQuestion!.question);
    note.handlers.get('click')!();
    expect(fake.windows[0]!.urls.at(-1)).toBe(`backchannel://panel/index.html#task=${id}`);
    // Its choices are the notification's buttons; pressing one answers the question.
    expect(note.options.actions).toEqual([
      { type: 'button', text: 'main' },
      { type: 'button', text: 'dev' },
    ]);
    note.handlers.get('action')!({ actionIndex: 1 }, 1);
    const answered = await waitForTask(bridge.subscribe, (task) => task.id === id && task.state === 'succeeded');
    expect(answered.pendingQuestion).toBeUndefined();
    expect((await bridge.taskResult(id))?.data).toMatchObject({ branch: 'dev' });
  });

  test('a free-text question is answered from the notification’s reply field', async () => {
    const { id } = await bridge.submit({ command: ASKER, args: ['[]'], label: 'open question' });
    const note = await waitFor(
      () => fake.notifications.find((n) => n.title === 'Needs an answer: open question'),
      'the notification',
      20_000,
    );
    expect(note.options).toMatchObject({ hasReply: true, actions: [] });
    note.handlers.get('reply')!({ reply: 'the release branch' }, 'the release branch');
    await waitForTask(bridge.subscribe, (task) => task.id === id && task.state === 'succeeded');
    expect((await bridge.taskResult(id))?.data).toEqual({ answer: 'the release branch' });
  });

  test('"Pause queue" in the tray pauses and resumes the queue, and the tray shows it', async () => {
    hooks.clickMenuItem('Pause queue');
    await waitFor(() => hooks.tray().tooltip.endsWith('(paused)'), 'the tooltip to say paused', 20_000);
    expect((await bridge.info()).paused).toBe(true);
    hooks.clickMenuItem('Pause queue');
    await waitFor(() => !hooks.tray().tooltip.endsWith('(paused)'), 'the tooltip to drop paused', 20_000);
    expect((await bridge.info()).paused).toBe(false);
  });

  test('quitting cancels the running task, kills its process and closes the broker', async () => {
    const { id } = await bridge.submit({ command: DEMO_AGENT, args: ['--mode=forever', '--interval=100'], label: 'still running' });
    const running = await waitForTask(bridge.subscribe, (task) => task.id === id && task.state === 'running' && task.pid !== undefined);
    await waitFor(() => hooks.tray().tooltip.includes('1 running'), 'the tooltip count', 20_000);
    hooks.clickMenuItem('Quit Backchannel');
    await waitFor(() => fake.trayDestroyed, 'the shutdown to finish', 30_000);
    await waitUntilGone([running.pid!]);
    expect(fake.quits).toBe(2); // the first quit waits for the broker, the second one ends the app
    // Cancelled by quitting: not worth a notification.
    expect(fake.notifications.map((n) => n.title)).not.toContain('Cancelled: still running');
    const history = fs.readdirSync(path.join(userData, 'state'));
    expect(history.length).toBeGreaterThan(0);
  });
});
