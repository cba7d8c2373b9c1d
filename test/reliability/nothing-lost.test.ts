/**
 * Fault table, issue 22 item 7: nothing lost, proven under load. Real agents write everything they
 * have in one write and close without reading (the broker's welcome, input and ack then land on a
 * socket that is gone), 100 times each, beside two CPU spinners: every run must succeed with every
 * partial, in order.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixture, makeBroker } from '../helpers/core.js';
import { runTask, type Finished } from '../helpers/broker.js';
import { expectNothingLeft } from '../helpers/reliability.js';

const RUNS = 100;
/** Runs at once: enough to finish in reasonable time, few enough to leave the spinners the CPU they contend for. */
const AT_ONCE = 6;

const spinners: ChildProcess[] = [];
beforeAll(() => {
  for (let i = 0; i < 2; i++) spinners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
});
afterAll(() => {
  for (const spinner of spinners) if (spinner.pid !== undefined) process.kill(spinner.pid, 'SIGKILL');
});

interface Tally {
  ok: number;
  failures: string[];
}

/** Runs the burst fixture RUNS times, AT_ONCE at a time, and says how each run went. */
async function hammer(args: string[], check: (done: Finished) => string | undefined): Promise<Tally> {
  const { broker, ipcDir } = makeBroker({ concurrency: AT_ONCE });
  const tally: Tally = { ok: 0, failures: [] };
  let next = 0;
  const worker = async () => {
    while (next < RUNS) {
      const run = next++;
      const done = await runTask(broker, { command: process.execPath, args: [fixture('nothing-lost/burst.mjs'), ...args] });
      const problem = done.error ? `${done.error.reason}: ${done.error.message}` : check(done);
      if (problem === undefined) tally.ok += 1;
      else tally.failures.push(`run ${run}: ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  await expectNothingLeft(ipcDir);
  return tally;
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

/** Generous: 100 real processes per test on a shared, loaded 2-core machine. */
const TIMEOUT = 600_000;

describe.skipIf(process.platform === 'win32')('an agent that writes everything in one write and closes without reading, 100 times under load', () => {
  test(
    'hello, 500 partials and the success in one write, then close: 100/100 succeed with every partial in order',
    async () => {
      const tally = await hammer(['--auth=hello', '--partials=500'], allInOrder(500));
      expect(tally.failures.slice(0, 5)).toEqual([]);
      expect(tally.ok).toBe(RUNS);
    },
    TIMEOUT,
  );

  test(
    'the success as the authenticating line (it carries the token, no hello), then close: 100/100 succeed',
    async () => {
      const tally = await hammer(['--auth=success'], allInOrder(0));
      expect(tally.failures.slice(0, 5)).toEqual([]);
      expect(tally.ok).toBe(RUNS);
    },
    TIMEOUT,
  );

  test(
    'hello, 20,000 partials and the success, then close: 100/100 succeed with every partial in order',
    async () => {
      const tally = await hammer(['--auth=hello', '--partials=20000'], allInOrder(20_000));
      expect(tally.failures.slice(0, 5)).toEqual([]);
      expect(tally.ok).toBe(RUNS);
    },
    TIMEOUT,
  );
});
