/** `backchannel discard <id> [--keep-branch]`: removes a coding task's worktree (and branch). */
import { EXIT } from '../command.js';
import { changeCommand } from '../run/client-command.js';
import { writeText } from '../terminal-text.js';

const HELP = `Usage: backchannel discard <id> [<id>...] [--keep-branch] [--json]

Removes the worktree of an ended coding task and its branch (backchannel/<id>), and what
Backchannel kept of it. With --keep-branch the worktree goes and the branch stays, with what the
agent left uncommitted committed onto it; the branch is then yours. Ids may be abbreviated.

Options:
  --keep-branch   keep the branch (and the diff, for \`backchannel apply\`)
  --json          one JSON array of the records as they were
  -h, --help      show this help`;

export const command = changeCommand({
  name: 'discard',
  help: HELP,
  options: { json: { type: 'boolean' }, 'keep-branch': { type: 'boolean' } },
  ids: [1, 64],
  async run({ line, changes, ids }) {
    const done = [];
    for (const id of ids) done.push(await (line.values['keep-branch'] ? changes.keepBranch(id) : changes.discard(id)));
    if (line.values.json) {
      process.stdout.write(JSON.stringify(done) + '\n');
      return EXIT.ok;
    }
    for (const record of done) {
      writeText(
        process.stdout,
        record.state === 'kept'
          ? `Removed the worktree of ${record.taskId}; kept branch ${record.branch}\n`
          : `Discarded ${record.taskId} (worktree and branch ${record.branch})\n`,
      );
    }
    return EXIT.ok;
  },
});
