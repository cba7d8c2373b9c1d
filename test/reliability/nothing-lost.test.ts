/**
 * Fault table, issue 22 item 7: nothing lost, proven under load. Real agents write everything they
 * have in one write and close without reading (the broker's welcome, input and ack then land on a
 * socket that is gone), RUNS times each, beside two CPU spinners: every run must succeed with every
 * partial, in order. `npm test` runs each case 10 times; the soak of 100 runs each is
 * `npm run test:long` (scripts/test-long.mjs, which CI runs too).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixture, makeBroker } from '../helpers/core.js';
import { runTask, type Finished } from '../helpers/broker.js';
import { expectNothingLeft } from '../helpers/reliability.js';

/** Runs per case: BACKCHANNEL_NOTHING_LOST_RUNS (100 in `npm run test:long`), 10 by default. */
const RUNS = runsFromEnvironment(process.env.BACKCHANNEL_NOTHING_LOST_RUNS, 10);
/** Runs at once: a loaded broker (it reaps, spawns and reads for several agents at a time) in reasonable wall time. */
const AT_ONCE = 6;
/** Generous: up to 100 real processes per test on a shared, loaded 2-core machine. */
const TIMEOUT = 600_000;

function runsFromEnvironment(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const runs = Number(value);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`BACKCHANNEL_NOTHING_LOST_RUNS expects a positive whole number, got "${value}"`);
  return runs;
}

const spinners: ChildProcess[] = [];
beforeAll(() => {
  for (let i = 0; i < 2; i++) spinners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
});
afterAll(() => {
  for (const spinner of spinners) if (spinner.pid !== undefined) process.kill(spinner.pid, 'SIGKILL');
});

/** Runs one agent RUNS times, AT_ONCE at a time, on one broker; returns what went wrong in each failed run. */
async function hammer(command: string, args: string[], check: (done: Finished) => string | undefined): Promise<string[]> {
  const { broker, ipcDir } = makeBroker({ concurrency: AT_ONCE });
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < RUNS) {
      const run = next++;
      const done = await runTask(broker, { command, args });
      const problem = done.error ? `${done.error.reason} after ${done.partials.length} partials: ${done.error.message}` : check(done);
      if (problem !== undefined) failures.push(`run ${run}: ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  await expectNothingLeft(ipcDir);
  return failures;
}

/** undefined when the run delivered its success and exactly `count` partials, numbered 0… in order. */
function allInOrder(count: number) {
  return (done: Finished): string | undefined => {
    if ((done.payload?.data as { count?: number } | undefined)?.count !== count) return `payload ${JSON.stringify(done.payload?.data)}`;
    const seen = done.partials.map((p) => (p.data as { i: number }).i);
    if (seen.length !== count) return `${seen.length} of ${count} partials`;
    const wrong = seen.findIndex((i, at) => i !== at);
    return wrong === -1 ? undefined : `partial ${wrong} was ${seen[wrong]}`;
  };
}

const node = (...args: string[]) => [process.execPath, [fixture('nothing-lost/burst.mjs'), ...args]] as const;
const python = (...args: string[]) => ['python3', [fixture('nothing-lost/burst.py'), ...args]] as const;

// Each line is about 215 bytes: 500 partials are ~105 KiB, 1,300 are ~275 KiB (over the 256 KiB the
// broker reads from one connection per turn), 20,000 are ~4.2 MiB (the agent blocks in its write
// until the broker has read most of it).
const cases = [
  ['hello, 500 partials and the success in one write, then close', node('--auth=hello', '--partials=500'), 500],
  ['the same in Python: sendall() and close() without a recv()', python('--auth=hello', '--partials=500'), 500],
  ['the success as the authenticating line (it carries the token, no hello), then close', node('--auth=success'), 0],
  [
    'hello, 1,300 partials (over the 256 KiB read per turn) and the success in one write, then close',
    node('--auth=hello', '--partials=1300'),
    1300,
  ],
  ['the same in Python, with the token on the first partial instead of a hello', python('--auth=partial', '--partials=1300'), 1300],
  ['hello, 20,000 partials and the success, then close', node('--auth=hello', '--partials=20000'), 20_000],
] as const;

describe.skipIf(process.platform === 'win32')(
  `an agent that writes everything at once and closes without reading, ${RUNS} times beside two CPU spinners`,
  () => {
    test.each(cases)(
      `%s: ${RUNS}/${RUNS} succeed with every partial in order`,
      async (_title, [command, args], count) => {
        const failures = await hammer(command, [...args], allInOrder(count));
        expect({ failed: failures.length, first: failures.slice(0, 3) }).toEqual({ failed: 0, first: [] });
      },
      TIMEOUT,
    );
  },
);
