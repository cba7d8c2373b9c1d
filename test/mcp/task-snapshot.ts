/** A Backchannel task snapshot for the MCP unit tests: a running task, with `fields` over it. */
import type { TaskSnapshot } from '../../src/model/task.js';

export function taskSnapshot(fields: Partial<TaskSnapshot> = {}): TaskSnapshot {
  return {
    id: '01a2-task',
    label: 'label',
    state: 'running',
    command: 'agent',
    args: [],
    cwd: '/',
    attempt: 1,
    maxAttempts: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    counters: { malformed: 0, rejected: 0, ignored: 0 },
    ...fields,
  };
}
