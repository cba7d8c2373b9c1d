/**
 * A clock a test moves by hand (src/model/clock.ts): `advance` runs the timers that come due, in
 * order, each at its own time; `spend` lets time pass without running any (a long callback, a
 * saturated event loop). Nothing waits on real time.
 */
import type { Clock } from '../../src/model/clock.js';

interface Timer {
  at: number;
  seq: number;
  run: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Set<Timer>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  after(ms: number, run: () => void, _holds?: boolean): () => void {
    const timer: Timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, run };
    this.#timers.add(timer);
    return () => this.#timers.delete(timer);
  }

  /** Timers not yet run nor cancelled. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Time passes and no timer runs (the caller is busy): they run late, at the next `advance`. */
  spend(ms: number): void {
    this.#now += ms;
  }

  /** Moves time on by `ms`, running every timer due by then (also those they set), earliest first. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (let ran = 0; ; ran++) {
      if (ran > 100_000) throw new Error('FakeClock: over 100,000 timers in one advance (a timer loop?)');
      const next = this.#next(end);
      if (!next) break;
      this.#timers.delete(next);
      this.#now = Math.max(this.#now, next.at);
      next.run();
    }
    this.#now = Math.max(this.#now, end);
  }

  #next(end: number): Timer | undefined {
    let next: Timer | undefined;
    for (const timer of this.#timers)
      if (timer.at <= end && (!next || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))) next = timer;
    return next;
  }
}
