/**
 * The Electron IPC layer without Electron: handlers registered on a fake ipcMain refuse foreign
 * senders, and subscriptions end when the page reloads or the window goes away.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { BRIDGE_METHODS } from '../../src/bridge/calls.js';
import { createIpcBridge } from '../../src/bridge/ipc-client.js';
import { callChannel, EVENT, SUBSCRIBE } from '../../src/bridge/ipc-channels.js';
import { panelSenderCheck, registerBridgeHandlers, type RegisteredHandlers } from '../../src/desktop/ipc-handlers.js';
import type { BridgeEvent } from '../../src/bridge/contract.js';
import { FakeIpc, startTestHeadless, type FakeRenderer, type TestHeadless } from '../helpers/panel.js';

const PANEL = 'backchannel://panel/index.html';

let headless: TestHeadless;
let ipc: FakeIpc;
let panel: FakeRenderer;
let handlers: RegisteredHandlers;
const refused: string[] = [];

beforeEach(async () => {
  headless = await startTestHeadless();
  ipc = new FakeIpc();
  panel = ipc.connect(PANEL);
  refused.length = 0;
  handlers = registerBridgeHandlers(ipc, headless.bridge, {
    isTrustedSender: panelSenderCheck('backchannel://panel', () => panel.id),
    onRefused: (channel) => refused.push(channel),
  });
});
afterEach(async () => {
  handlers.dispose();
  await headless.stop();
});

const nextEvent = (renderer: FakeRenderer): Promise<BridgeEvent> =>
  new Promise((resolve) => {
    const listener = (_e: unknown, _id: unknown, event: unknown): void => {
      renderer.removeListener(EVENT, listener as never);
      resolve(event as BridgeEvent);
    };
    renderer.on(EVENT, listener as never);
  });

describe('registering', () => {
  test('one handler per bridge call, all under the backchannel: prefix', () => {
    expect([...ipc.handlers.keys()].sort()).toEqual(BRIDGE_METHODS.map(callChannel).sort());
    expect([...ipc.handlers.keys(), ...ipc.listeners.keys()].every((c) => c.startsWith('backchannel:'))).toBe(true);
  });

  test('dispose removes every handler and listener', () => {
    handlers.dispose();
    expect(ipc.handlers.size).toBe(0);
    expect([...ipc.listeners.values()].every((set) => set.size === 0)).toBe(true);
    handlers = registerBridgeHandlers(ipc, headless.bridge, { isTrustedSender: () => true });
  });
});

describe('sender validation', () => {
  test('a call from another page of the same window is refused', async () => {
    const bridge = createIpcBridge(panel);
    panel.frameUrl = 'https://evil.example/';
    await expect(bridge.listTasks()).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('Refused') });
    expect(refused).toContain(callChannel('listTasks'));
  });

  test('a call from another webContents showing our page is refused', async () => {
    const other = ipc.connect(PANEL);
    await expect(createIpcBridge(other).info()).rejects.toMatchObject({ code: 'invalid_request' });
  });

  test('a file:// or look-alike origin is refused', async () => {
    for (const url of [
      'file:///work/main/dist/renderer/index.html',
      'backchannel://panel.evil/index.html',
      'backchannel://evil/x',
      'not a url',
    ]) {
      panel.frameUrl = url;
      expect(await ipc.handlers.get(callChannel('info'))!({ sender: panel.sender, senderFrame: { url } })).toMatchObject({ ok: false });
    }
  });

  test('a destroyed frame (senderFrame null) is refused', async () => {
    expect(await ipc.handlers.get(callChannel('info'))!({ sender: panel.sender, senderFrame: null })).toMatchObject({ ok: false });
  });

  test('a subscription from a foreign sender gets no events', async () => {
    const other = ipc.connect(PANEL);
    other.send(SUBSCRIBE, 1);
    expect(handlers.subscriptionCount).toBe(0);
    expect(refused).toContain(SUBSCRIBE);
  });

  test('the panel itself is answered', async () => {
    const info = await createIpcBridge(panel).info();
    expect(info.mode).toBe('headless');
  });
});

describe('subscriptions', () => {
  test('the first event is the full picture and unsubscribing ends the subscription', async () => {
    const bridge = createIpcBridge(panel);
    const events: BridgeEvent[] = [];
    const got = new Promise<void>((resolve) => {
      const unsubscribe = bridge.subscribe((event) => {
        events.push(event);
        unsubscribe();
        resolve();
      });
    });
    await got;
    expect(events[0]).toMatchObject({ full: true, tasks: [] });
    expect(handlers.subscriptionCount).toBe(0);
    expect(panel.listenerCount(EVENT)).toBe(0);
  });

  test('a reloaded page (a new client on the same webContents) drops the old subscriptions', () => {
    const first = createIpcBridge(panel);
    first.subscribe(() => {});
    first.subscribe(() => {});
    expect(handlers.subscriptionCount).toBe(2);
    createIpcBridge(panel); // the preload runs again on reload
    expect(handlers.subscriptionCount).toBe(0);
  });

  test('a destroyed window ends its subscriptions', async () => {
    const bridge = createIpcBridge(panel);
    bridge.subscribe(() => {});
    await nextEvent(panel);
    expect(handlers.subscriptionCount).toBe(1);
    panel.destroy();
    expect(handlers.subscriptionCount).toBe(0);
  });
});
