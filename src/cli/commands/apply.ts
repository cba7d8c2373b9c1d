/** `backchannel apply <id> [<id>…]`: brings coding tasks' changes into the checkout, all or none. */
import { EXIT } from '../command.js';
import { changeCommand } from '../run/client-command.js';
import { writeText } from '../terminal-text.js';

const HELP = `Usage: backchannel apply <id> [<id>...] [--json]

Brings the changes of coding tasks, in the order given, into the working tree of the repository
they were made from (not staged, nothing committed). All of them apply, or none does: when one does
not apply cleanly the working tree is left as it was and the conflicting files are named. The
worktrees stay until \`backchannel discard\`. Ids may be abbreviated.

Options:
  --json        {"ok": true, "applied": [ids], "files": [...]} or {"ok": false, "conflict": {...}, "message"}
  -h, --help    show this help

Exit codes: 0 applied, 1 a conflict (nothing changed) or a refusal.`;

export const command = changeCommand({
  name: 'apply',
  help: HELP,
  options: { json: { type: 'boolean' } },
  ids: [1, 64],
  async run({ line, changes, ids }) {
    const outcome = await changes.apply(ids);
    if (line.values.json) {
      process.stdout.write(JSON.stringify(outcome) + '\n');
      return outcome.ok ? EXIT.ok : EXIT.failed;
    }
    if (!outcome.ok) {
      writeText(process.stderr, `backchannel apply: ${outcome.message}\n`);
      return EXIT.failed;
    }
    const n = outcome.applied.length;
    writeText(
      process.stdout,
      `Applied ${n} change${n === 1 ? '' : 's'} (${outcome.files.length} file${outcome.files.length === 1 ? '' : 's'}): ${outcome.files.join(', ')}\n`,
    );
    return EXIT.ok;
  },
});
