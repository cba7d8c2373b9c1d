/** `backchannel retry <id>`: runs an ended task again, as a new task. */
import { EXIT } from '../command.js';
import { taskCommand } from '../run/client-command.js';

const HELP = `Usage: backchannel retry <id> [--json]

Runs an ended task of the running hub again with the same command and input, as a new task, and
says which (\`Started <new id>, a retry of <id>\`). The id may be abbreviated.

Options:
  --json        print {"task_id": "<new id>"}
  -h, --help    show this help`;

export const command = taskCommand({
  name: 'retry',
  help: HELP,
  options: { json: { type: 'boolean' } },
  positionals: [1, 1],
  history: false,
  async run({ line, client, id }) {
    const oldId = await id();
    const { id: newId } = await client.retry(oldId);
    process.stdout.write(line.values.json ? JSON.stringify({ task_id: newId }) + '\n' : `Started ${newId}, a retry of ${oldId}\n`);
    return EXIT.ok;
  },
});
