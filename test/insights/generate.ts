/** Writes a history journal of finished tasks with chosen agents, models, outcomes, durations and tokens. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FailureReason, TaskSnapshot } from '../../src/model/task.js';

export interface GeneratedTask {
  agent: string;
  model?: string;
  label?: string;
  /** When it ended. */
  endedAt: string;
  durationMs: number;
  reason?: FailureReason;
  tokens?: { input: number; output: number };
  /** The gateway's guard counts its caller annotated (`annotations.bridge_guard`, also in its meta). */
  guard?: { violations: number; corrections: number; unknown_tools: number };
}

let counter = 0;

export function snapshotOf(task: GeneratedTask): TaskSnapshot {
  counter += 1;
  const ended = Date.parse(task.endedAt);
  const startedAt = new Date(ended - task.durationMs).toISOString();
  const id = `0190${String(ended).padStart(13, '0')}-${String(counter).padStart(8, '0')}`;
  const meta = {
    timestamp: task.endedAt,
    ...(task.model ? { model_used: task.model } : {}),
    ...(task.tokens ? { token_usage: task.tokens } : {}),
    ...(task.guard ? { bridge_guard: task.guard } : {}),
  };
  const status = task.reason ? (task.reason === 'cancelled' ? 'cancelled' : 'error') : 'success';
  return {
    id,
    label: task.label ?? task.agent,
    state: task.reason ? (task.reason === 'cancelled' ? 'cancelled' : 'failed') : 'succeeded',
    ...(task.reason ? { reason: task.reason } : {}),
    command: 'node',
    args: [`/agents/${task.agent}`],
    cwd: '/',
    attempt: 1,
    maxAttempts: 1,
    createdAt: startedAt,
    startedAt,
    endedAt: task.endedAt,
    result: { task_id: id, status, data: {}, meta } as TaskSnapshot['result'],
    counters: { malformed: 0, rejected: 0, ignored: 0 },
    ...(task.guard ? { annotations: { bridge_guard: task.guard } } : {}),
  };
}

/** Writes `tasks` as `ended` records into `<dir>/journal.ndjson`; returns their snapshots. */
export function writeJournal(dir: string, tasks: GeneratedTask[]): TaskSnapshot[] {
  mkdirSync(dir, { recursive: true });
  const snapshots = tasks.map(snapshotOf);
  const lines = snapshots.map((task) =>
    JSON.stringify({
      e: 'ended',
      id: task.id,
      at: task.endedAt,
      task,
      spec: { command: 'node', args: task.args, cwd: '/', label: task.label },
    }),
  );
  writeFileSync(path.join(dir, 'journal.ndjson'), lines.join('\n') + '\n');
  return snapshots;
}
