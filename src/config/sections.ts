/**
 * The `run:` and `serve:` sections of the config file, each declared once as a strict shape: the keys
 * a command takes from the file, their types (durations as people write them: `90s`, `10m`), and one
 * line naming the key when one is wrong or unknown. A command merges the parsed section into its
 * parsed options (a flag given on the command line wins); nothing is written back as argv text.
 *
 *   run:   { timeout, heartbeat_timeout, retries, ask_timeout }
 *   serve: { port, data_dir, concurrency, history_limit, agent_cpu, keep_token, redis, queue,
 *            timeout, heartbeat_timeout }   (the last two: every task's default guards, src/hub/task-guards.ts)
 */
import * as z from 'zod/mini';
import { durationTooLong, MAX_DURATION_MS } from '../model/duration.js';
import { firstProblem, must, PLACE } from '../model/shapes.js';
import { ConfigError, SETTING, type LoadedConfig } from './file.js';

/** A whole number from `min` to `max`, its message saying so. */
function integerFrom(min: number, max?: number) {
  const what = max === undefined ? (min === 0 ? 'a non-negative integer' : 'a positive integer') : `an integer from ${min} to ${max}`;
  const error = must(`must be ${what}`);
  return z.number({ error }).check(z.int({ error }), z.minimum(min, { error }), ...(max === undefined ? [] : [z.maximum(max, { error })]));
}

/** A duration a timer can hold (at most MAX_DURATION_MS; 0 for none). */
const timerDuration = z.pipe(
  SETTING.duration,
  z.number().check(z.maximum(MAX_DURATION_MS, { error: (issue) => durationTooLong(PLACE, Number(issue.input)) })),
);

const SHAPES = {
  run: {
    timeout: timerDuration,
    heartbeat_timeout: timerDuration,
    retries: SETTING.integer,
    ask_timeout: timerDuration,
  },
  serve: {
    port: integerFrom(0, 65535),
    data_dir: SETTING.string,
    concurrency: integerFrom(1),
    history_limit: integerFrom(1),
    agent_cpu: SETTING.string,
    keep_token: SETTING.boolean,
    redis: SETTING.string,
    queue: SETTING.string,
    timeout: timerDuration,
    heartbeat_timeout: timerDuration,
  },
};

type Shapes = typeof SHAPES;
export type CommandSection = keyof Shapes;
/** A parsed section: the keys the file sets, with their types. */
export type Section<S extends CommandSection> = { [K in keyof Shapes[S]]?: z.output<Shapes[S][K]> };

function strictSection<S extends CommandSection>(name: S) {
  const shape = SHAPES[name];
  const optional = Object.fromEntries(Object.entries(shape).map(([key, schema]) => [key, z.optional(schema)]));
  return z.strictObject(optional, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown key "${name}.${String(issue.keys[0])}" (expected ${Object.keys(shape).join(', ')})`
        : undefined,
  });
}

const SECTIONS = { run: strictSection('run'), serve: strictSection('serve') };

/**
 * The `run:` or `serve:` section of `config`, checked; an empty value (`timeout:` with nothing after it)
 * is not set. Throws a one-line `ConfigError`: `<file>: run.timeout must be a duration such as 90s, …`.
 */
export function commandSection<S extends CommandSection>(config: LoadedConfig, name: S): Section<S> {
  const raw = config.sections[name] ?? {};
  const given = Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== undefined && value !== null));
  const parsed = z.safeParse(SECTIONS[name], given);
  if (!parsed.success) throw new ConfigError(`${config.path}: ${firstProblem(parsed.error, name)}`);
  return parsed.data as Section<S>;
}
