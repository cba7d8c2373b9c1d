/**
 * Time as code that waits reads it: the system's by default. A test injects a fake clock and moves
 * it itself (test/helpers/fake-clock.ts), so what it asserts — "nothing before N ms", "then it
 * goes" — does not depend on how busy the machine is.
 */
export interface Clock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
  /**
   * Runs `run` once, `ms` from now, and returns its cancel. The timer does not hold the process
   * open, unless `holds` (a wait the process exists for, as the one between a task's attempts).
   */
  after(ms: number, run: () => void, holds?: boolean): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, run, holds = false) {
    const timer = setTimeout(run, ms);
    if (!holds) timer.unref();
    return () => clearTimeout(timer);
  },
};
