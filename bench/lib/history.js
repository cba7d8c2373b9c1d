/**
 * Writes a finished history straight into a data directory — a journal of `ended` records and, for
 * the tasks given a big result, its file in `results/` — as a broker of this version would have
 * left it. Seconds instead of the minutes 1,000 real tasks take; used by bench/big-history.js and
 * test/broker/task-pages.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const PREVIEW_CHARS = 400;

function uuidAt(ms, n) {
  const hex = ms.toString(16).padStart(12, '0');
  const tail = n.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-${tail}`;
}

/**
 * `count` finished tasks, one a second up to now; `big(i)` says how many characters task i's result
 * data has (0: a small inline result). Returns the ids, oldest first.
 */
export function writeHistory(dataDir, { count, big = () => 0, states = () => 'succeeded' }) {
  mkdirSync(path.join(dataDir, 'results'), { recursive: true, mode: 0o700 });
  const start = Date.now() - count * 1000;
  const lines = [];
  const ids = [];
  const blobs = new Map();
  for (let i = 0; i < count; i++) {
    const created = start + i * 1000;
    const id = uuidAt(created, i);
    ids.push(id);
    const at = new Date(created).toISOString();
    const endedAt = new Date(created + 500).toISOString();
    const state = states(i);
    const meta = { attempts: 1, channel: 'socket', exit_code: 0, received_at: endedAt, model_used: 'bench-model' };
    const task = {
      id,
      label: `task ${i}`,
      state,
      command: 'node',
      args: ['agent.mjs'],
      cwd: '/tmp',
      attempt: 1,
      maxAttempts: 1,
      createdAt: at,
      startedAt: at,
      endedAt,
      counters: { malformed: 0, rejected: 0, ignored: 0 },
      exitCode: 0,
      signal: null,
    };
    if (state !== 'succeeded') Object.assign(task, { reason: 'error', message: 'failed: bench' });
    const size = big(i);
    const result = { task_id: id, status: state === 'succeeded' ? 'success' : 'error', data: { n: i, text: `result ${i}` }, meta };
    if (size > 0) {
      if (!blobs.has(size)) blobs.set(size, 'x'.repeat(size));
      result.data = { n: i, text: blobs.get(size) };
      const json = JSON.stringify(result);
      writeFileSync(path.join(dataDir, 'results', `${id}.json`), json, { mode: 0o600 });
      task.resultSummary = {
        bytes: Buffer.byteLength(json),
        preview: JSON.stringify(result.data).slice(0, PREVIEW_CHARS),
        status: result.status,
        meta,
      };
    } else {
      task.result = result;
    }
    const spec = { command: 'node', args: ['agent.mjs'], cwd: '/tmp', label: task.label };
    lines.push(JSON.stringify({ e: 'ended', id, at: endedAt, task, spec }));
  }
  writeFileSync(path.join(dataDir, 'journal.ndjson'), lines.join('\n') + '\n', { mode: 0o600 });
  return ids;
}
