/**
 * The renderer side of the Electron bridge, given an `ipcRenderer`. The preload exposes the object
 * this returns as `window.backchannel`. No Electron import, so tests run it against fake IPC.
 */
import type { BackchannelBridge, BridgeEvent } from './contract.js';
import { bridgeClient, unwrapReply, type BridgeArgs, type BridgeMethod, type BridgeResult } from './calls.js';
import { callChannel, EVENT, RESET, SUBSCRIBE, UNSUBSCRIBE } from './ipc-channels.js';

export interface IpcRendererLike {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>;
  send(channel: string, ...args: unknown[]): void;
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown;
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown;
}

export function createIpcBridge(ipc: IpcRendererLike): BackchannelBridge {
  // A reloaded page starts over: subscriptions of the previous page end now.
  ipc.send(RESET);
  let nextSubscription = 1;

  async function call<M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> {
    return unwrapReply<BridgeResult<M>>(await ipc.invoke(callChannel(method), ...args));
  }

  function subscribe(listener: (event: BridgeEvent) => void): () => void {
    const id = nextSubscription++;
    const onEvent = (_event: unknown, subscriptionId: unknown, payload: unknown): void => {
      if (subscriptionId === id) listener(payload as BridgeEvent);
    };
    ipc.on(EVENT, onEvent as (event: unknown, ...args: unknown[]) => void);
    ipc.send(SUBSCRIBE, id);
    return () => {
      ipc.removeListener(EVENT, onEvent as (event: unknown, ...args: unknown[]) => void);
      ipc.send(UNSUBSCRIBE, id);
    };
  }

  return bridgeClient(call, subscribe);
}
