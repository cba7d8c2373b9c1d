/**
 * What a person needs beside a sub-agent's question to answer it in context. A coding task's question
 * says where it stands (its branch and the files it has changed so far); every front-end (the panel,
 * the terminal, notifications, MCP) shows it in these words.
 */
import type { PendingQuestion } from './task.js';

/** "On branch backchannel/01a2327f; changed so far: src/a.ts, README.md", or undefined for a task without a worktree. */
export function questionContext(question: Pick<PendingQuestion, 'worktree'>): string | undefined {
  const where = question.worktree;
  if (!where) return undefined;
  return `On branch ${where.branch}; changed so far: ${where.files.length ? where.files.join(', ') : 'nothing'}`;
}
