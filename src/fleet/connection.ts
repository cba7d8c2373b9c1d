/**
 * The Redis connection every fleet client (queue, queue events, worker, fire claims) uses.
 *
 * BullMQ 5's RedisConnection reports a start-up that failed as an 'error' event, even when close()
 * cut that start-up and removed every listener first: with Redis hung after the handshake, its
 * version check's `INFO` is cut by close(), rejects with "Connection is closed.", and EventEmitter,
 * finding no listener, throws it. That was an unhandled rejection, which ends a hub or a worker on
 * its way out with a stack trace. This connection emits 'error' only to a listener, as BullMQ 6
 * does (taskforcesh/bullmq#3546); while a client is open its own listener is always there.
 */
import { RedisConnection } from 'bullmq';

export class FleetConnection extends RedisConnection {
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error' && this.listenerCount('error') === 0) return false;
    return super.emit(event, ...args);
  }
}

/** The same for a connection BullMQ makes itself (a Worker's blocking connection is not given a class). */
export function emitErrorsToListenersOnly(connection: RedisConnection): void {
  connection.emit = FleetConnection.prototype.emit;
}
