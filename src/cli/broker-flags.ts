/**
 * Flags shared by the commands that start a broker (`run`, `serve`): durations checked against the
 * timer limit, the environment sub-agents inherit (`--env-allow`, `--env-deny`) and `--require-token`.
 */
import { parseDuration } from '../model/duration.js';
import { durationTooLong, MAX_DURATION_MS, type BrokerOptions, type EnvPolicy } from '../client/index.js';

export const BROKER_FLAGS = {
  'env-allow': { type: 'string', multiple: true },
  'env-deny': { type: 'string', multiple: true },
  'require-token': { type: 'boolean' },
} as const;

export const BROKER_FLAGS_HELP = `  --env-allow <names>       only these variables of ours reach sub-agents (comma-separated, * wildcards; repeatable)
  --env-deny <names>        these variables never reach sub-agents (comma-separated, * wildcards; repeatable)
  --require-token           refuse socket connections whose first line has no token (see docs/protocol.md §3)`;

interface BrokerFlagValues {
  'env-allow'?: string[];
  'env-deny'?: string[];
  'require-token'?: boolean;
}

/** The broker options these flags set (only the ones given). */
export function brokerFlagOptions(values: BrokerFlagValues): Pick<BrokerOptions, 'env' | 'requireToken'> {
  const names = (list: string[] | undefined) => list?.flatMap((item) => item.split(',')).filter((name) => name.trim() !== '');
  const env: EnvPolicy = {};
  const allow = names(values['env-allow']);
  const deny = names(values['env-deny']);
  if (allow) env.allow = allow;
  if (deny) env.deny = deny;
  return {
    ...(allow || deny ? { env } : {}),
    ...(values['require-token'] ? { requireToken: true } : {}),
  };
}

/**
 * A `--<name> <duration>` value — `90s`, `10m`, `1h30m`, or a number of milliseconds — that a timer
 * can hold. Throws a message for a usage error.
 */
export function durationFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = parseDuration(value);
  if (n === undefined || !Number.isFinite(n) || n < 0)
    throw new Error(`--${name} expects a duration such as 90s, 10m, 1h or a number of milliseconds, got "${value}"`);
  if (n > MAX_DURATION_MS) throw new Error(durationTooLong(`--${name}`, n));
  return n;
}
