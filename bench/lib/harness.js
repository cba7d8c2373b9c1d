/**
 * Each benchmark module runs as its own process (fresh heap, fds and RSS): `node bench/<module>.js
 * '{"quick":true}'`. It prints progress on stderr and its rows as one `BENCH_RESULT <json>` line.
 */
import { cleanEnvironment } from './env.js';

export async function main(run) {
  cleanEnvironment();
  const options = JSON.parse(process.argv[2] ?? '{}');
  // Exit explicitly either way: a failed variant can leave sockets or children that keep the loop alive.
  try {
    const result = await run(options);
    process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
    process.exit(0);
  } catch (error) {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exit(1);
  }
}

/**
 * One table row. `value` and `baseline` are in `unit`; `ratio` is value / baseline unless given;
 * `target` is { op: '<=' | '>=', ratio } or undefined for context-only rows.
 */
export function row(fields) {
  const { value, baseline } = fields;
  const ratio = fields.ratio ?? (Number.isFinite(value) && Number.isFinite(baseline) && baseline !== 0 ? value / baseline : undefined);
  let pass;
  if (fields.target && Number.isFinite(ratio))
    pass = fields.target.op === '<=' ? ratio <= fields.target.ratio : ratio >= fields.target.ratio;
  return { ...fields, ratio, pass };
}
