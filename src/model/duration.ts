/**
 * Durations for people, the one way the panel (task times, Insights) and the terminal (`stats`,
 * `tasks`) write them, so the same figure reads the same everywhere: "450ms", "6.5s", "42s",
 * "2m05s", "1h02m". Seconds keep one decimal below a minute (a p95 of 6.5 s is not 6 s), a
 * trailing ".0" is dropped, and there is no space inside, so a terminal table's columns stay
 * split by whitespace (as kubectl's ages).
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (Math.round(ms) < 1000) return `${Math.round(ms)}ms`;
  const tenths = Math.round(ms / 100);
  if (tenths < 600) return `${tenths / 10}s`;
  const s = Math.round(ms / 1000);
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/**
 * A duration as people write it, in milliseconds: `90s`, `10m`, `1h30m`, `250ms`, `7d`; a bare
 * number is milliseconds (what every `--…timeout` flag took before). Undefined when it is neither.
 */
export function parseDuration(text: string): number | undefined {
  const value = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(value)) return Number(value);
  if (!DURATION.test(value)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit!]!;
  return Math.round(ms);
}

/**
 * The longest duration in milliseconds a timeout, grace period or backoff may be: Node's timers hold
 * at most 2^31 − 1 ms (about 24.8 days); a larger value overflows and fires after 1 ms, so a
 * "3-year timeout" would fail a task at once. The core checks every duration against it where it
 * enters (broker/guards/duration.ts); front-ends word their usage errors with `durationTooLong`.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** The message for a duration over the timer limit (the core's and the CLI's usage errors alike). */
export function durationTooLong(name: string, value: number): string {
  return `\`${name}\` is ${value} ms, more than the ${MAX_DURATION_MS} ms (about 24.8 days) a timer can hold; use 0 for no limit`;
}
