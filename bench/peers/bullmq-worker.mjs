// The fleet module's raw peer: a bare BullMQ Worker that runs each job's agent (the same program as
// the Backchannel workers run, with `--task-id=<job id>`) and returns its stdout. Prints `ready`
// once connected; SIGTERM closes it.
//   node bench/peers/bullmq-worker.mjs <redis url> <queue> <concurrency> <agent>
import { execFile } from 'node:child_process';
import { Worker } from 'bullmq';

const [url, queue, concurrency, agent] = process.argv.slice(2);
const { hostname, port } = new URL(url);
const run = (job) =>
  new Promise((resolve, reject) => execFile(agent, [`--task-id=${job.id}`], (error, stdout) => (error ? reject(error) : resolve(stdout))));
const worker = new Worker(queue, run, {
  connection: { host: hostname, port: Number(port), maxRetriesPerRequest: null },
  concurrency: Number(concurrency),
});
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
