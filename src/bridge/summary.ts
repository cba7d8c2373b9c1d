/** Small task summaries shared by the panel and the tray (no Node or DOM imports); the words come from model/states.ts. */
import { isActive, isFault } from '../model/states.js';
import type { TaskSnapshot } from '../model/task.js';

/** The tray-style summary: "2 running, 1 queued, 1 failed". */
export function countsText(tasks: Iterable<TaskSnapshot>): string {
  let running = 0;
  let queued = 0;
  let failed = 0;
  for (const task of tasks) {
    if (isActive(task.state)) running++;
    else if (task.state === 'queued') queued++;
    else if (isFault(task.state)) failed++;
  }
  return summaryText(running, queued, failed);
}

/** The same summary from counts by state (`running` includes `retrying`), e.g. a bridge event's `counts`. */
export function countsSummary(counts: { running: number; queued: number; failed: number; interrupted: number }): string {
  return summaryText(counts.running, counts.queued, counts.failed + counts.interrupted);
}

function summaryText(running: number, queued: number, failed: number): string {
  const parts: string[] = [];
  if (running) parts.push(`${running} running`);
  if (queued) parts.push(`${queued} queued`);
  if (failed) parts.push(`${failed} failed`);
  return parts.length ? parts.join(', ') : 'Idle';
}
