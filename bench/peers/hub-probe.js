/**
 * The probe of bench/hub-answer.js, in a process of its own so that what it times is the hub's
 * answer, not the bench process's own loop (which follows the load's 50 task streams). Asks the hub
 * at BACKCHANNEL_CONTROL for a page of tasks and for `info`, alternately, one at a time, PROBE_GAP_MS
 * apart. Over its IPC channel: `{sample: n}` takes n samples; `{sample: 'until-stop'}` samples until
 * `{stop: true}`; each answers `{samples: [{kind, ms}]}`. `{exit: true}` closes the client and exits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openClient } from '../../dist/client/index.js';

/** Between two requests: often enough to see each stall, rare enough not to load the hub. */
const PROBE_GAP_MS = 20;

const client = await openClient({ withoutHub: 'refuse' });
let stopped = false;

process.on('message', async (message) => {
  if (message.exit) {
    await client.close();
    process.exit(0);
  }
  if (message.stop) {
    stopped = true;
    return;
  }
  stopped = false;
  const n = message.sample === 'until-stop' ? Number.POSITIVE_INFINITY : message.sample;
  const samples = [];
  for (let i = 0; i < n && !stopped; i++) {
    const kind = i % 2 === 0 ? 'page' : 'info';
    const t0 = performance.now();
    if (kind === 'page') await client.listTaskPage({ limit: 50 });
    else await client.info();
    samples.push({ kind, ms: performance.now() - t0 });
    await sleep(PROBE_GAP_MS);
  }
  process.send({ samples });
});
process.send({ ready: true });
