/**
 * The MCP tools on coding tasks' changes (docs/coding-agents.md), beside ./tools.ts: a task started
 * with `worktree: true` runs in a git worktree of its own; these read its diff, apply it into the
 * user's checkout (all or nothing) and discard it. Each is a few lines over the seam's `changes`.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import type { BackchannelClient } from '../client/index.js';
import { combineChanges } from '../model/change-overlap.js';
import { jsonResult } from './snapshots.js';

const TASK_ID = z.string().min(1).describe('The task id of a coding task started with worktree=true (a unique prefix is enough).');

/** The worktree arguments of the start tools (START_SHAPE). */
export const WORKTREE_SHAPE = {
  worktree: z
    .boolean()
    .optional()
    .describe(
      'Run the sub-agent in a git worktree of its own (a new branch from `base` of the repository containing cwd), ' +
        "never in the user's checkout. Its change is then the result: get_task_diff, apply_task_change, discard_task_change.",
    ),
  base: z.string().optional().describe('With worktree: the branch, tag or commit to start from. Default: HEAD.'),
};

/** `worktree` and `base` as a submission's `worktree`. */
export function worktreeRequest(args: { worktree?: boolean; base?: string }): { worktree?: true | { base: string } } {
  if (args.base !== undefined && !args.worktree) throw new Error('`base` needs `worktree: true`');
  if (!args.worktree) return {};
  return { worktree: args.base === undefined ? true : { base: args.base } };
}

export function registerChangeTools(server: McpServer, client: BackchannelClient): void {
  const { changes } = client;

  server.registerTool(
    'get_task_diff',
    {
      title: "Get a coding task's change",
      description:
        'The change a coding task made in its worktree: one unified diff against its base (its commits and what it left ' +
        'uncommitted), with files, insertions, deletions and branch. Several task_ids: their diffs together, with `overlaps` ' +
        'listing the places where two tasks changed the same or adjacent lines (review those before applying).',
      inputSchema: { task_ids: z.array(TASK_ID).min(1).max(16).describe('One task id, or several to review together.') },
      annotations: { readOnlyHint: true },
    },
    async ({ task_ids }) => {
      const ids = await Promise.all(task_ids.map((id) => changes.resolve(id)));
      const all = await Promise.all(ids.map((id) => changes.change(id)));
      const overlaps = all.length > 1 ? combineChanges(all.map(({ record, diff }) => ({ taskId: record.taskId, diff }))).overlaps : [];
      return jsonResult({
        changes: all.map(({ record, diff }) => ({ task_id: record.taskId, state: record.state, change: record.change ?? null, diff })),
        overlaps,
      });
    },
  );

  server.registerTool(
    'apply_task_change',
    {
      title: "Apply coding tasks' changes",
      description:
        "Brings the changes of coding tasks, in the order given, into the user's working tree (not staged, not committed). " +
        'All apply or none does: on a conflict nothing is changed and the result names the task and the conflicting files.',
      inputSchema: { task_ids: z.array(TASK_ID).min(1).max(64).describe('The tasks whose changes to apply, in order.') },
      annotations: { destructiveHint: false, idempotentHint: false },
    },
    async ({ task_ids }) => {
      const ids = await Promise.all(task_ids.map((id) => changes.resolve(id)));
      const outcome = await changes.apply(ids);
      return outcome.ok ? jsonResult(outcome) : { ...jsonResult(outcome), isError: true };
    },
  );

  server.registerTool(
    'discard_task_change',
    {
      title: "Discard a coding task's worktree",
      description:
        "Removes an ended coding task's worktree and its branch. With keep_branch the branch stays (what the agent left " +
        'uncommitted is committed onto it) and only the worktree goes.',
      inputSchema: { task_id: TASK_ID, keep_branch: z.boolean().optional().describe('Keep the branch. Default: false.') },
      annotations: { destructiveHint: true },
    },
    async ({ task_id, keep_branch }) => {
      const id = await changes.resolve(task_id);
      const record = keep_branch ? await changes.keepBranch(id) : await changes.discard(id);
      return jsonResult({ task_id: id, state: record.state, branch: record.branch, branch_kept: record.state === 'kept' });
    },
  );
}
