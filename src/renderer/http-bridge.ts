/**
 * The headless implementation of `BackchannelBridge`: JSON endpoints over fetch, events over
 * EventSource. The panel installs it as `window.backchannel` when no Electron preload did.
 * Also used from Node in tests (pass `fetch` and `EventSource` implementations).
 */
import type { BackchannelBridge, BridgeEvent } from '../bridge/contract.js';
import { bridgeClient, checkArgs, type BridgeArgs, type BridgeMethod, type BridgeResult } from '../bridge/calls.js';
import { BridgeError, errorFromBody } from '../model/errors.js';
import { buildRequest, EVENTS_PATH } from '../bridge/http-routes.js';
import { requestInit, takeEarly, type EarlyRequest } from './first-calls.js';

/** The subset of the DOM's EventSource the bridge uses. */
export interface EventSourceLike {
  onmessage: ((event: { data: string }) => void) | null;
  close(): void;
}

export interface HttpBridgeOptions {
  /** Origin of the server, e.g. `http://127.0.0.1:4321`. */
  origin: string;
  token: string;
  fetch?: typeof fetch;
  EventSource?: new (url: string) => EventSourceLike;
  /** The answer already asked for to this request, if any (boot.js's, see ./first-calls.ts): taken in place of a fetch. */
  early?: (request: EarlyRequest) => Promise<Response> | undefined;
}

export function createHttpBridge(options: HttpBridgeOptions): BackchannelBridge {
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const EventSourceImpl =
    options.EventSource ?? (globalThis as unknown as { EventSource: new (url: string) => EventSourceLike }).EventSource;

  async function call<M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> {
    // Checked here as well as on the server: a URL path turns every id into a string, so without
    // this `getTask(42)` would be "not found" here but "invalid" over IPC.
    const request = buildRequest(method, checkArgs(method, args));
    let response: Response;
    try {
      response = await (options.early?.(request) ?? doFetch(options.origin + request.path, requestInit(request, options.token)));
    } catch (error) {
      throw new BridgeError('internal', `The Backchannel server is not reachable (${(error as Error).message})`);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      throw new BridgeError('internal', `The server answered ${response.status} with something that is not JSON`);
    }
    if (!response.ok) throw errorFromBody(parsed);
    return (parsed ?? undefined) as BridgeResult<M>;
  }

  /** One EventSource per subscription: each starts with its own full picture, as the contract says. */
  function openStream(listener: (event: BridgeEvent) => void): () => void {
    const url = `${options.origin}${EVENTS_PATH}?token=${encodeURIComponent(options.token)}`;
    // EventSource reconnects by itself; every (re)connection starts with a full picture again.
    const source = new EventSourceImpl(url);
    let open = true;
    source.onmessage = (message) => {
      if (!open) return;
      let event: BridgeEvent;
      try {
        event = JSON.parse(message.data) as BridgeEvent;
      } catch {
        return;
      }
      listener(event);
    };
    return () => {
      open = false;
      source.close();
    };
  }

  return bridgeClient(call, openStream);
}

/**
 * In the browser: when no preload provided `window.backchannel`, build the HTTP bridge from the
 * page's own origin and the `?token=` it was opened with.
 */
export function installHttpBridge(): void {
  if (typeof window === 'undefined' || (window as Partial<Window>).backchannel) return;
  const token = new URLSearchParams(window.location.search).get('token') ?? '';
  const early = window.backchannelEarly;
  window.backchannel = createHttpBridge({ origin: window.location.origin, token, early: (request) => takeEarly(early, request) });
}
