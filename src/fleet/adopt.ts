/**
 * A dead worker's finished results, taken up by the worker that comes back on the same endpoint
 * directory (a worker's death must not throw finished work away). An agent whose worker
 * died as it finished gets no acknowledgement and spools its result (`<dir>/<task_id>.json`,
 * protocol/spool.ts); the keeper (./keeper.ts) lets it do so before it stops the agents.
 *
 * While a job runs, its worker notes it beside the spool: `<dir>/<task_id>.job` holds the job's id
 * and the worker's pid and process start time. A worker starting finds the notes of workers that
 * are gone (pid and start time no longer match), and for each spooled success keeps the report
 * under the job's report key, where the broker looks for a lost job's report before it runs the job
 * again (redis-queue.ts). Only a success is finished work: an error spooled then is most often the
 * worker's death itself (no input came, a question or tool call lost its connection), and a
 * `cancelled` one is the keeper's stop; those jobs run again.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readSpoolFile, removeSpoolFile, spoolPath } from '../protocol/spool.js';
import { processStartTime } from '../broker/process/start-time.js';
import type { AttemptReport } from './wire.js';

const JOB_SUFFIX = '.job';
/** A job id as the broker makes them (`<task>.<attempt>`, `.again` for its second run): nothing else is trusted. */
const JOB_ID = /^[0-9a-f-]{36}\.\d+(\.again)?$/;

function notePath(dir: string, taskId: string): string {
  return path.join(dir, `${path.basename(taskId)}${JOB_SUFFIX}`);
}

/** Notes that this worker runs `jobId` for `taskId` (owner-only, in the private endpoint directory). */
export function noteJob(dir: string, taskId: string, jobId: string): void {
  try {
    writeFileSync(notePath(dir, taskId), `${jobId} ${process.pid} ${processStartTime(process.pid) ?? ''}\n`, { mode: 0o600 });
  } catch {
    // Without the note a result spooled at this worker's death is not adopted: the job runs again.
  }
}

/** The job is over (reported, or never started): its note goes. */
export function forgetJob(dir: string, taskId: string): void {
  rmSync(notePath(dir, taskId), { force: true });
}

/** The reports of finished jobs of dead workers found in `dir`, by job id; their notes and spool files are removed. */
export function spooledReports(dir: string, worker: string): Array<{ jobId: string; report: AttemptReport }> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith(JOB_SUFFIX));
  } catch {
    return [];
  }
  const found: Array<{ jobId: string; report: AttemptReport }> = [];
  for (const name of names) {
    const taskId = name.slice(0, -JOB_SUFFIX.length);
    const [jobId = '', pid = '', start = ''] = readNote(path.join(dir, name));
    // A live worker's job is its own business, and a note not ours to read is left alone.
    if (!JOB_ID.test(jobId) || !jobId.startsWith(`${taskId}.`)) continue;
    if (start !== '' && processStartTime(Number(pid)) === start) continue;
    const file = spoolPath(dir, taskId);
    const read = readSpoolFile(file, taskId);
    if (read.ok && read.payload.status === 'success') {
      const payload = { ...read.payload, meta: { ...read.payload.meta, worker } };
      found.push({
        jobId,
        report: { worker, outcome: { kind: 'final', payload, channel: 'spool' }, exitCode: undefined, exitSignal: undefined },
      });
    }
    removeSpoolFile(file);
    forgetJob(dir, taskId);
  }
  return found;
}

function readNote(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split(' ');
  } catch {
    return [];
  }
}
