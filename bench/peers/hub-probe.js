/**
 * The probe of bench/hub-answer.js, in a process of its own so that what it times is the hub's
 * answer, not the bench process's own loop (which follows the load's 50 task streams). Asks the hub
 * at BACKCHANNEL_CONTROL for a page of tasks and for `info`, alternately, one at a time, PROBE_GAP_MS
 * apart. Over its IPC channel: `{sample: n}` takes n samples; `{sample: 'until-stop'}` samples until
 * `{stop: true}`; each answers `{samples: [{kind, ms, at, bareMs}]}` (`at`: when the request to the
 * hub was sent, ms since the epoch). `{exit: true}` closes the client and exits. With
 * BENCH_BARE_SOCKET set (bench/peers/bare-answer.js, the limit), each request to the hub is paired
 * with the same one to that bare answerer (`bareMs`), right before or right after it (in turn), so
 * both are timed under the same load and neither always has the place.
 */
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { openClient } from '../../dist/client/index.js';

/** Between two requests: often enough to see each stall, rare enough not to load the hub. */
const PROBE_GAP_MS = 20;

const BARE_SOCKET = process.env.BENCH_BARE_SOCKET;

/** One request to the bare answerer, made as the hub client makes its calls (a new request, body read whole): ms. */
function askBare(path) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: BARE_SOCKET, method: 'GET', path }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(performance.now() - t0);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** One request to the hub through its client: ms, and when it was sent (ms since the epoch, to match with the hub's side). */
async function askHub(kind) {
  const at = performance.timeOrigin + performance.now();
  const t0 = performance.now();
  if (kind === 'page') await client.listTaskPage({ limit: 50 });
  else await client.info();
  return { ms: performance.now() - t0, at };
}

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
    // Which of the two is asked first alternates (every other pair of requests), so neither has the place.
    const bareFirst = BARE_SOCKET !== undefined && i % 4 >= 2;
    const bareBefore = bareFirst ? await askBare(`/${kind}`) : undefined;
    const { ms, at } = await askHub(kind);
    const bareMs = bareFirst ? bareBefore : BARE_SOCKET ? await askBare(`/${kind}`) : undefined;
    samples.push({ kind, ms, at, bareMs });
    await sleep(PROBE_GAP_MS);
  }
  process.send({ samples });
});
process.send({ ready: true });
