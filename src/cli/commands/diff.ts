/** `backchannel diff <id> [<id>…]`: a coding task's change, or several tasks' changes reviewed together. */
import { combineChanges } from '../../model/change-overlap.js';
import { describeChange } from '../../model/change.js';
import { shortTaskId } from '../../model/task-ids.js';
import { EXIT } from '../command.js';
import { changeCommand } from '../run/client-command.js';
import { showCombined, showDiff, wantsColour, writeShown } from '../run/diff-text.js';
import { writeText } from '../terminal-text.js';

const HELP = `Usage: backchannel diff <id> [<id>...] [--stat] [--json]

Shows what a coding task (\`run --worktree\`) changed: one diff against its base, its commits and
what it left uncommitted. With several ids, their changes are shown together file by file, and the
hunks where two tasks touched the same or adjacent lines are flagged ("!! overlaps …") before
anything is applied. Colour on a terminal only (NO_COLOR turns it off). Ids may be abbreviated.

Options:
  --stat        the changed files with their added and removed lines, not the diff
  --json        one task: {"record", "diff"}; several: {"changes": [...], "overlaps": [...]}
  -h, --help    show this help`;

export const command = changeCommand({
  name: 'diff',
  help: HELP,
  options: { json: { type: 'boolean' }, stat: { type: 'boolean' } },
  ids: [1, 16],
  async run({ line, changes, ids }) {
    const all = await Promise.all(ids.map((id) => changes.change(id)));
    const colour = wantsColour(process.stdout);
    if (line.values.json) {
      const body =
        all.length === 1
          ? all[0]
          : { changes: all, overlaps: combineChanges(all.map(({ record, diff }) => ({ taskId: record.taskId, diff }))).overlaps };
      process.stdout.write(JSON.stringify(body) + '\n');
      return EXIT.ok;
    }
    if (line.values.stat) {
      for (const { record } of all) {
        const change = record.change;
        writeText(process.stdout, `${record.taskId}  ${record.branch}  ${change ? describeChange(change) : '(still working)'}\n`);
        for (const file of change?.files ?? []) {
          writeText(
            process.stdout,
            `  ${file.status.padEnd(12)} ${file.binary ? 'binary' : `+${file.insertions} −${file.deletions}`}  ${file.path}\n`,
          );
        }
      }
      return EXIT.ok;
    }
    if (all.length === 1) {
      const { diff, record } = all[0]!;
      if (diff === '') process.stderr.write(`Task ${record.taskId} changed nothing${record.change ? '' : ' (yet)'}.\n`);
      writeShown(process.stdout, showDiff(diff, colour), colour);
      return EXIT.ok;
    }
    const labels = new Map(all.map(({ record }, i) => [record.taskId, `#${i + 1} ${shortTaskId(record.taskId)}`]));
    const view = combineChanges(all.map(({ record, diff }) => ({ taskId: record.taskId, diff })));
    writeShown(
      process.stdout,
      showCombined(view, (id) => labels.get(id) ?? id, colour),
      colour,
    );
    return EXIT.ok;
  },
});
