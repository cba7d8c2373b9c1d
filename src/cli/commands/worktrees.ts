/** `backchannel worktrees`: the worktrees Backchannel made for coding tasks. */
import { describeChange } from '../../model/change.js';
import { EXIT } from '../command.js';
import { changeCommand } from '../run/client-command.js';
import { writeText } from '../terminal-text.js';

const HELP = `Usage: backchannel worktrees [--json]

Lists the git worktrees Backchannel made for coding tasks (\`run --worktree\`), oldest first: the
task, where its change stands (working, ready, applied, kept), its branch, its size and repository.
Worktrees and branches it did not make are never listed nor touched.

Options:
  --json        one JSON array of worktree records
  -h, --help    show this help`;

export const command = changeCommand({
  name: 'worktrees',
  help: HELP,
  options: { json: { type: 'boolean' } },
  ids: [0, 0],
  async run({ line, changes }) {
    const records = await changes.list();
    if (line.values.json) {
      process.stdout.write(JSON.stringify(records) + '\n');
      return EXIT.ok;
    }
    if (records.length === 0) {
      process.stdout.write('No worktrees.\n');
      return EXIT.ok;
    }
    const rows = records.map((r) => [r.taskId, r.state, r.branch, r.change ? describeChange(r.change) : '', r.repo]);
    const header = ['TASK', 'STATE', 'BRANCH', 'CHANGE', 'REPOSITORY'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
    for (const row of [header, ...rows])
      writeText(process.stdout, row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ') + '\n');
    return EXIT.ok;
  },
});
