/** `backchannel tasks`: the hub's tasks (or the history on disk), newest first. */
import { isStateFilter, stateInWords, STATE_FILTER_NAMES, STATE_FILTERS } from '../../model/states.js';
import { MAX_TASK_PAGE_SIZE, TASK_STATES, type TaskSnapshot } from '../../model/task.js';
import { formatUsd, tokensOf } from '../../model/usage.js';
import { EXIT, usageError } from '../command.js';
import { writeText } from '../terminal-text.js';
import { taskCommand } from '../run/client-command.js';
import { wellFormedJson } from '../../model/well-formed.js';

const HELP = `Usage: backchannel tasks [--json] [--state running|queued|finished|failed] [--limit n]

Lists the tasks of the running hub (the desktop app or \`backchannel serve\`), newest first; without a
hub, the history on disk. In the other task commands an id may be abbreviated: its short id (the last 12 hex digits, or any
unique end of them) or a unique start of it.

Options:
  --state <s>   only running (incl. retrying), queued, finished (any end) or failed (failed, interrupted) tasks
  --limit <n>   at most n tasks (default: 20)
  --json        one JSON array of task snapshots
  -h, --help    show this help`;

export const command = taskCommand({
  name: 'tasks',
  help: HELP,
  options: { json: { type: 'boolean' }, state: { type: 'string' }, limit: { type: 'string' } },
  positionals: [0, 0],
  history: true,
  async run({ line, client }) {
    const { state, limit: limitText, json } = line.values;
    if (state !== undefined && !isStateFilter(state)) {
      return usageError(`backchannel tasks: Expected \`--state\` to be one of ${STATE_FILTER_NAMES.join(', ')}, got \`${state}\``, HELP);
    }
    const limit = limitText === undefined ? 20 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1) {
      return usageError(`backchannel tasks: Expected \`--limit\` to be a positive integer, got \`${limitText}\``, HELP);
    }
    // Pages, newest first, as many as the limit needs: never every task of a long history.
    const states = state === undefined ? undefined : TASK_STATES.filter(STATE_FILTERS[state]);
    const tasks: TaskSnapshot[] = [];
    let before: string | undefined;
    do {
      const page = await client.listTaskPage({ state: states, before, limit: Math.min(limit - tasks.length, MAX_TASK_PAGE_SIZE) });
      tasks.push(...page.tasks);
      before = page.next;
    } while (before !== undefined && tasks.length < limit);
    if (json) {
      process.stdout.write(wellFormedJson(tasks) + '\n');
      return EXIT.ok;
    }
    if (tasks.length === 0) {
      process.stdout.write(client.where.kind === 'hub' ? 'No tasks.\n' : 'No tasks in the history (no hub is running).\n');
      return EXIT.ok;
    }
    const rows = tasks.map((task) => [
      task.id,
      stateInWords(task),
      task.progress === undefined ? '' : `${Math.round(task.progress)}%`,
      usageCell(task),
      task.createdAt,
      task.label,
    ]);
    const header = ['ID', 'STATE', 'PROGRESS', 'USAGE', 'CREATED', 'LABEL'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    // Labels are agent text: neutralised on a terminal (one character for one, so the columns hold).
    for (const row of [header, ...rows]) {
      writeText(process.stdout, row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ') + '\n');
    }
    return EXIT.ok;
  },
});

/** "150tok", "150tok/$0.03": what the agent reported spending, one word so the columns stay split by whitespace. */
function usageCell(task: TaskSnapshot): string {
  if (!task.usage) return '';
  const cost = task.usage.costUsd === undefined ? '' : `/$${formatUsd(task.usage.costUsd)}`;
  return `${tokensOf(task.usage)}tok${cost}`;
}
