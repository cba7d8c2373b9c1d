/**
 * The bridge's events as Server-Sent Events: one bridge subscription per open stream, each starting
 * with its own full picture. A client too far behind is dropped (it reconnects and gets a fresh full
 * picture); a keep-alive comment stops proxies and browsers from closing a quiet stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BackchannelBridge, BridgeEvent } from '../../bridge/contract.js';
import { wellFormedJson } from '../../model/well-formed.js';

/** A client this far behind on the event stream is dropped; it reconnects and gets a full picture. */
const MAX_STREAM_BACKLOG_BYTES = 8 * 1024 * 1024;

export class EventStreams {
  readonly #open = new Set<ServerResponse>();

  constructor(
    private readonly bridge: BackchannelBridge,
    private readonly keepAliveMs: number,
  ) {}

  /** Answers `req` with an event stream that lasts until either side closes it. */
  open(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.write('retry: 1000\n\n');
    this.#open.add(res);
    const unsubscribe = this.bridge.subscribe((event: BridgeEvent) => {
      if (res.writableLength > MAX_STREAM_BACKLOG_BYTES) {
        res.destroy();
        return;
      }
      res.write(`data: ${wellFormedJson(event)}\n\n`);
    });
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), this.keepAliveMs);
    keepAlive.unref();
    const end = (): void => {
      clearInterval(keepAlive);
      unsubscribe();
      this.#open.delete(res);
    };
    req.on('close', end);
    res.on('close', end);
  }

  /** Ends every open stream. */
  endAll(): void {
    for (const res of this.#open) res.end();
    this.#open.clear();
  }
}
