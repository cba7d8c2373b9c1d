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
