/**
 * The HTTP side of a request's task: abort when the client goes away, and a server-sent-events
 * responder that starts lazily (on the first event, so errors before it still get a status code).
 */
import type { ServerResponse } from 'node:http';
import { STREAM_KEEP_ALIVE_MS } from '../../model/streams.js';
import type { CancelWhy } from './runner.js';

/** SSE comment sent on a started stream that has been quiet this long (see STREAM_KEEP_ALIVE_MS). */
export const DEFAULT_KEEP_ALIVE_MS = STREAM_KEEP_ALIVE_MS;

/**
 * An AbortController aborted with `'disconnect'` when the client closes the connection before the
 * response was sent. Call it on the first byte: a client gone before its task starts must not leave
 * the task running.
 */
export function abortOnDisconnect(res: ServerResponse): AbortController {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort('disconnect' satisfies CancelWhy);
  });
  return abort;
}

/** One server-sent event. */
export function sseEvent(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

/**
 * Writes a `text/event-stream` response: `start()` sends the headers (Nagle off: written at once)
 * and `firstEvent`, then a keep-alive comment after every `keepAliveMs` of quiet. Writes after the
 * response ended or the socket closed are dropped. `close()` stops the keep-alive.
 */
export class SseResponder {
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly keepAliveMs: number = DEFAULT_KEEP_ALIVE_MS,
  ) {}

  get started(): boolean {
    return this.res.headersSent;
  }

  /** Sends the headers (with `extraHeaders`) and `firstEvent`, once; later calls do nothing. */
  start(extraHeaders: Record<string, string>, firstEvent: string): void {
    if (this.res.headersSent) return;
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      ...extraHeaders,
    });
    this.res.flushHeaders();
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), this.keepAliveMs);
    this.write(firstEvent);
  }

  write(text: string): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    this.res.write(text);
    this.keepAlive?.refresh();
  }

  /** Ends the stream with `last` and stops the keep-alive. */
  end(last: string): void {
    this.close();
    this.res.end(last);
  }

  close(): void {
    clearInterval(this.keepAlive);
  }
}
