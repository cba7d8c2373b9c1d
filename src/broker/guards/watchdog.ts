/**
 * The two timers of an attempt: an overall deadline, and a stall watchdog that any message resets.
 * `Timeout.refresh()` re-arms without allocating, which matters for agents sending 100k+ messages.
 */
export type WatchdogFire = 'timeout' | 'stalled';

export class AttemptTimers {
  private deadline: NodeJS.Timeout | undefined;
  private stall: NodeJS.Timeout | undefined;

  constructor(
    timeoutMs: number,
    readonly heartbeatTimeoutMs: number,
    onFire: (kind: WatchdogFire) => void,
  ) {
    if (timeoutMs > 0) this.deadline = setTimeout(() => onFire('timeout'), timeoutMs);
    if (heartbeatTimeoutMs > 0) this.stall = setTimeout(() => onFire('stalled'), heartbeatTimeoutMs);
  }

  /** The agent said something: it is alive. */
  alive(): void {
    this.stall?.refresh();
  }

  stop(): void {
    clearTimeout(this.deadline);
    clearTimeout(this.stall);
    this.deadline = undefined;
    this.stall = undefined;
  }
}
