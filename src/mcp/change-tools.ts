/**
 * The MCP tools on coding tasks' changes (docs/coding-agents.md), a table beside ./tools.ts' (rows of
 * ./tool-table.ts): a task started with `worktree: true` runs in a git worktree of its own; these
 * read its diff, apply it into the user's checkout (all or nothing) and discard it. Each is a few
 * lines over the client's `changes`.
 */
import * as z from 'zod';
import { combineChanges } from '../model/change-overlap.js';
import { jsonResult } from './snapshots.js';
import { defineTool, type McpTool } from './tool-table.js';

const TASK_ID = z.string().min(1).describe('The task id of a coding task started with worktree=true (a unique prefix is enough).');

export const CHANGE_TOOLS: readonly McpTool[] = [
  defineTool({
    name: 'get_task_diff',
    title: "Get a coding task's change",
    description:
      'The change a coding task made in its worktree: one unified diff against its base (its commits and what it left ' +
      'uncommitted), with files, insertions, deletions and branch. Several task_ids: their diffs together, with `overlaps` ' +
      'listing the places where two tasks changed the same or adjacent lines (review those before applying).',
    inputSchema: { task_ids: z.array(TASK_ID).min(1).max(16).describe('One task id, or several to review together.') },
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ task_ids }, { client: { changes } }) {
      const ids = await Promise.all(task_ids.map((id) => changes.resolve(id)));
      const all = await Promise.all(ids.map((id) => changes.change(id)));
      const overlaps = all.length > 1 ? combineChanges(all.map(({ record, diff }) => ({ taskId: record.taskId, diff }))).overlaps : [];
      return jsonResult({
        changes: all.map(({ record, diff }) => ({ task_id: record.taskId, state: record.state, change: record.change ?? null, diff })),
        overlaps,
      });
    },
  }),
  defineTool({
    name: 'apply_task_change',
    title: "Apply coding tasks' changes",
    description:
      "Brings the changes of coding tasks, in the order given, into the user's working tree (not staged, not committed). " +
      'All apply or none does: on a conflict nothing is changed and the result names the task and the conflicting files.',
    inputSchema: { task_ids: z.array(TASK_ID).min(1).max(64).describe('The tasks whose changes to apply, in order.') },
    // Writes into the user's checkout, deletions included: destructive, and a second apply is not a no-op.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async handler({ task_ids }, { client: { changes } }) {
      const ids = await Promise.all(task_ids.map((id) => changes.resolve(id)));
      const outcome = await changes.apply(ids);
      return outcome.ok ? jsonResult(outcome) : { ...jsonResult(outcome), isError: true };
    },
  }),
  defineTool({
    name: 'discard_task_change',
    title: "Discard a coding task's worktree",
    description:
      "Removes an ended coding task's worktree and its branch. With keep_branch the branch stays (what the agent left " +
      'uncommitted is committed onto it) and only the worktree goes.',
    inputSchema: { task_id: TASK_ID, keep_branch: z.boolean().optional().describe('Keep the branch. Default: false.') },
    // Deletes the worktree (and the branch unless kept); a second call finds nothing to discard.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async handler({ task_id, keep_branch }, { client: { changes } }) {
      const id = await changes.resolve(task_id);
      const record = keep_branch ? await changes.keepBranch(id) : await changes.discard(id);
      return jsonResult({ task_id: id, state: record.state, branch: record.branch, branch_kept: record.state === 'kept' });
    },
  }),
];
