/**
 * Time as code that waits reads it: the system's by default. A test injects a fake clock and moves
 * it itself (test/helpers/fake-clock.ts), so what it asserts — "nothing before N ms", "then it
 * goes" — does not depend on how busy the machine is.
 */
export interface Clock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
  /** Runs `run` once, `ms` from now; the timer does not hold the process open. Returns its cancel. */
  after(ms: number, run: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, run) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
