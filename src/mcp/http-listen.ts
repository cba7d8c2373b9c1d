/**
 * A `subscriptions/listen` for tasks over Streamable HTTP (./task-listen.ts serves it; ./http.ts routes it here): the
 * POST's response is the subscription's event stream, as the SDK's own listen router answers — the acknowledgement
 * first, each message an SSE `message` event, a comment every KEEP_ALIVE_MS so proxies keep it open, and the listen
 * request's result last when the server ends it. A refusal is the JSON-RPC error as a JSON body (status 200, as the
 * SDK's router answers its own refusals). The client's stream going away cancels the subscription (each request is
 * its own subscription: HTTP has no session to tie a `notifications/cancelled` to).
 */
import type { ServerResponse } from 'node:http';
import { serveTaskListen, type ListenMessage, type ListenSink, type TaskSubscription } from './task-listen.js';
import type { BackchannelClient } from '../client/index.js';
import { STREAM_KEEP_ALIVE_MS as KEEP_ALIVE_MS } from '../model/streams.js';

/** The task subscriptions open on one HTTP endpoint, to close them when it closes. */
export class HttpTaskListens {
  readonly #open = new Set<TaskSubscription>();

  constructor(
    private readonly client: Pick<BackchannelClient, 'follow' | 'taskResult'>,
    private readonly serverInfo: { name: string; version: string },
  ) {}

  get size(): number {
    return this.#open.size;
  }

  /** Serves the listen `request` on `res` until the subscription ends or the client goes away. */
  async serve(request: { id: string | number; params: Record<string, unknown> }, res: ServerResponse): Promise<void> {
    let streaming = false;
    let keepAlive: NodeJS.Timeout | undefined;
    let subscription: TaskSubscription | undefined;
    let gone = false;
    const done = new Promise<void>((resolve) => {
      res.once('close', () => {
        gone = true;
        clearInterval(keepAlive);
        subscription?.cancel();
        resolve();
      });
    });
    const sink: ListenSink = {
      send(message: ListenMessage) {
        if (gone || res.writableEnded) return;
        if (!streaming && 'error' in message) {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(message));
          return;
        }
        if (!streaming) {
          streaming = true;
          res.writeHead(200, {
            'Content-Type': 'text/event-stream',
            'Cache-Control': 'no-cache, no-transform',
            Connection: 'keep-alive',
            'X-Accel-Buffering': 'no',
          });
          keepAlive = setInterval(() => res.write(': keepalive\n\n'), KEEP_ALIVE_MS);
          keepAlive.unref();
        }
        res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
      },
      end() {
        clearInterval(keepAlive);
        if (!res.writableEnded) res.end();
      },
    };
    try {
      subscription = await serveTaskListen(this.client, request, sink, this.serverInfo);
    } catch (error) {
      sink.send({ jsonrpc: '2.0', id: request.id, error: { code: -32603, message: `Internal error: ${(error as Error).message}` } });
      sink.end();
      return;
    }
    if (!subscription) return;
    if (gone) return subscription.cancel();
    this.#open.add(subscription);
    await done;
    this.#open.delete(subscription);
  }

  /** Ends every subscription with its result (the endpoint is closing). */
  closeAll(): void {
    for (const subscription of this.#open) subscription.close();
  }
}
