/**
 * The main-process side of the Electron bridge: one `ipcMain.handle` per bridge call and a small
 * subscription protocol for events. Every call goes through the shared `dispatch`, exactly like
 * the HTTP server, so both hosts answer the same way. No Electron import (typed structurally), so
 * tests drive it with a fake `ipcMain`.
 */
import type { BackchannelBridge } from '../bridge/contract.js';
import { BRIDGE_METHODS, dispatch, type BridgeReply } from '../bridge/calls.js';
import { withOrigin } from '../bridge/checks.js';
import { callChannel, EVENT, RESET, SUBSCRIBE, UNSUBSCRIBE } from '../bridge/ipc-channels.js';

export interface SenderLike {
  readonly id: number;
  send(channel: string, ...args: unknown[]): void;
  isDestroyed(): boolean;
  once(event: 'destroyed', listener: () => void): unknown;
}

export interface IpcEventLike {
  readonly sender: SenderLike;
  /** The frame that sent the message; null when it navigated away or was destroyed. */
  readonly senderFrame: { readonly url: string } | null;
}

export interface IpcMainLike {
  handle(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => unknown): void;
  removeHandler(channel: string): void;
  on(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => void): unknown;
  removeListener(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => void): unknown;
}

export interface BridgeHandlerOptions {
  /** Decides whether a message comes from our own panel (origin and frame). Refused otherwise. */
  isTrustedSender(event: IpcEventLike): boolean;
  /** Told about refused senders (for the log). */
  onRefused?(channel: string, event: IpcEventLike): void;
}

export interface RegisteredHandlers {
  /** Removes every handler and ends every subscription. */
  dispose(): void;
  /** Number of live subscriptions (tests check for leaks). */
  readonly subscriptionCount: number;
}

export const UNTRUSTED_SENDER: BridgeReply = {
  ok: false,
  error: { code: 'invalid_request', message: 'Refused: the call did not come from the Backchannel panel' },
};

export function registerBridgeHandlers(ipc: IpcMainLike, bridge: BackchannelBridge, options: BridgeHandlerOptions): RegisteredHandlers {
  /** sender id → subscription id → unsubscribe */
  const subscriptions = new Map<number, Map<number, () => void>>();

  const trusted = (channel: string, event: IpcEventLike): boolean => {
    if (options.isTrustedSender(event)) return true;
    options.onRefused?.(channel, event);
    return false;
  };

  for (const method of BRIDGE_METHODS) {
    const channel = callChannel(method);
    // The panel's submissions and schedules are judged by the run policy as the panel's, whatever they say.
    const doorArgs = (args: unknown[]) =>
      method === 'submit' || method === 'addSchedule' ? [withOrigin(args[0], 'panel'), ...args.slice(1)] : args;
    ipc.handle(channel, (event, ...args) => (trusted(channel, event) ? dispatch(bridge, method, doorArgs(args)) : UNTRUSTED_SENDER));
  }

  const endAll = (senderId: number): void => {
    const forSender = subscriptions.get(senderId);
    if (!forSender) return;
    for (const unsubscribe of forSender.values()) unsubscribe();
    subscriptions.delete(senderId);
  };

  const onSubscribe = (event: IpcEventLike, subscriptionId: unknown): void => {
    if (!trusted(SUBSCRIBE, event) || typeof subscriptionId !== 'number') return;
    const { sender } = event;
    let forSender = subscriptions.get(sender.id);
    if (!forSender) {
      forSender = new Map();
      subscriptions.set(sender.id, forSender);
      sender.once('destroyed', () => endAll(sender.id));
    }
    forSender.get(subscriptionId)?.();
    const unsubscribe = bridge.subscribe((bridgeEvent) => {
      if (sender.isDestroyed()) return endAll(sender.id);
      sender.send(EVENT, subscriptionId, bridgeEvent);
    });
    forSender.set(subscriptionId, unsubscribe);
  };

  const onUnsubscribe = (event: IpcEventLike, subscriptionId: unknown): void => {
    if (!trusted(UNSUBSCRIBE, event) || typeof subscriptionId !== 'number') return;
    const forSender = subscriptions.get(event.sender.id);
    forSender?.get(subscriptionId)?.();
    forSender?.delete(subscriptionId);
  };

  const onReset = (event: IpcEventLike): void => {
    if (!trusted(RESET, event)) return;
    const forSender = subscriptions.get(event.sender.id);
    if (!forSender) return;
    for (const unsubscribe of forSender.values()) unsubscribe();
    forSender.clear();
  };

  ipc.on(SUBSCRIBE, onSubscribe);
  ipc.on(UNSUBSCRIBE, onUnsubscribe);
  ipc.on(RESET, onReset);

  return {
    dispose() {
      for (const method of BRIDGE_METHODS) ipc.removeHandler(callChannel(method));
      ipc.removeListener(SUBSCRIBE, onSubscribe);
      ipc.removeListener(UNSUBSCRIBE, onUnsubscribe);
      ipc.removeListener(RESET, onReset);
      for (const senderId of [...subscriptions.keys()]) endAll(senderId);
    },
    get subscriptionCount() {
      let count = 0;
      for (const forSender of subscriptions.values()) count += forSender.size;
      return count;
    },
  };
}

/**
 * The trust rule the shell uses: the message comes from the panel's own webContents and its main
 * frame shows a page of our custom scheme (never a navigated-away or injected frame).
 */
export function panelSenderCheck(panelOrigin: string, panelWebContentsId: () => number | undefined): (event: IpcEventLike) => boolean {
  return (event) => {
    const url = event.senderFrame?.url;
    if (!url) return false;
    let origin: string;
    try {
      // Not `URL.origin`: Node reports "null" as the origin of non-special schemes like ours.
      const parsed = new URL(url);
      origin = `${parsed.protocol}//${parsed.host}`;
    } catch {
      return false;
    }
    return origin === panelOrigin && event.sender.id === panelWebContentsId();
  };
}
