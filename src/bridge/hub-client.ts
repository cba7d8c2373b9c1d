/**
 * The bridge over the hub's control endpoint (HTTP on a Unix domain socket): the same
 * `BackchannelBridge` the panel uses, built by `bridgeClient` from the one route table, so a CLI
 * command, the MCP server or the gateway in another process drives the running app's broker.
 *
 * When the hub goes away (killed, stopped), calls reject with `HubLostError` and every event
 * subscription ends: `onLost` listeners hear about it once, so a waiting front-end fails with a clear
 * message instead of hanging.
 */
import { request, type IncomingMessage } from 'node:http';
import type { BackchannelBridge, BridgeEvent } from './contract.js';
import { bridgeClient, errorFromBody, unwrapReply, type BridgeArgs, type BridgeMethod, type BridgeResult } from './calls.js';
import { buildRequest, EVENTS_PATH } from './http-routes.js';

/** A call that gets no reply within this long fails (the hub answers every call at once; waits happen over events). */
export const HUB_CALL_TIMEOUT_MS = 30_000;

/** The hub cannot be reached, or went away. */
export class HubLostError extends Error {
  readonly code = 'hub_lost';
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`The Backchannel hub (control endpoint ${path}) is gone: ${detail}`);
    this.name = 'HubLostError';
  }
}

export interface HubClient extends BackchannelBridge {
  readonly path: string;
  /** Calls `listener` once when an event stream breaks or a call cannot reach the hub; returns the unsubscribe. */
  onLost(listener: (error: HubLostError) => void): () => void;
  /** Ends every event subscription of this client. */
  close(): void;
}

export function connectHub(path: string): HubClient {
  const lostListeners = new Set<(error: HubLostError) => void>();
  const streams = new Set<IncomingMessage>();
  let closed = false;
  const lost = (error: HubLostError): HubLostError => {
    if (!closed) for (const listener of [...lostListeners]) listener(error);
    return error;
  };

  async function call<M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> {
    const shape = buildRequest(method, args);
    const body = shape.body === undefined ? undefined : JSON.stringify(shape.body);
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        {
          socketPath: path,
          method: shape.verb,
          path: shape.path,
          headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          timeout: HUB_CALL_TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', (error) => reject(lost(new HubLostError(path, error.message))));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no reply to ${method} within ${HUB_CALL_TIMEOUT_MS} ms`)));
      req.on('error', (error) => reject(lost(new HubLostError(path, error.message))));
      req.end(body);
    });
    const value = text === '' ? null : (JSON.parse(text) as unknown);
    if (status !== 200) throw errorFromBody(value);
    return unwrapReply<BridgeResult<M>>({ ok: true, value });
  }

  function subscribe(listener: (event: BridgeEvent) => void): () => void {
    let current: IncomingMessage | undefined;
    let unsubscribed = false;
    const req = request({ socketPath: path, method: 'GET', path: EVENTS_PATH }, (res) => {
      current = res;
      streams.add(res);
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        let end: number;
        while ((end = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          for (const line of block.split('\n')) {
            if (line.startsWith('data: ')) listener(JSON.parse(line.slice(6)) as BridgeEvent);
          }
        }
      });
      res.on('close', () => {
        streams.delete(res);
        if (!unsubscribed) lost(new HubLostError(path, 'its event stream closed'));
      });
    });
    req.on('error', (error) => {
      if (!unsubscribed) lost(new HubLostError(path, error.message));
    });
    req.end();
    return () => {
      unsubscribed = true;
      req.destroy();
      current?.destroy();
    };
  }

  const client = bridgeClient(call, subscribe) as HubClient;
  return Object.assign(client, {
    path,
    onLost(listener: (error: HubLostError) => void) {
      lostListeners.add(listener);
      return () => lostListeners.delete(listener);
    },
    close() {
      closed = true;
      for (const stream of streams) stream.destroy();
      streams.clear();
      lostListeners.clear();
    },
  });
}
