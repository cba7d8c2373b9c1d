/** `backchannel wait <id>`: waits for a task to end; prints its result and exits like `run`. */
import { isFinished } from '../../model/task.js';
import { EXIT } from '../command.js';
import { printOutcome } from '../run/outcome.js';
import { NO_HUB } from '../../client/index.js';
import { taskCommand } from '../run/client-command.js';

const HELP = `Usage: backchannel wait <id> [--json]

Waits until the task ends, prints its final payload (or failure) and exits with \`run\`'s codes:
0 success, 1 error/crash/protocol error, 124 timeout or stall, 130 cancelled. The id may be abbreviated.

Options:
  --json        print exactly one JSON line
  -h, --help    show this help`;

export const command = taskCommand({
  name: 'wait',
  help: HELP,
  options: { json: { type: 'boolean' } },
  positionals: [1, 1],
  history: true,
  async run({ line, client, id }) {
    const taskId = await id();
    const { task } = await client.getTask(taskId);
    // Without a hub an interrupted task is not settled yet: the next hub may still recover its result.
    const settled = isFinished(task.state) && (client.where.kind === 'hub' || task.state !== 'interrupted');
    if (!settled && client.where.kind !== 'hub') {
      process.stderr.write(`backchannel wait: task ${taskId} has not finished (${task.state} in the history on disk); ${NO_HUB}\n`);
      return EXIT.failed;
    }
    // Printed as `run` prints it: the same handle, the same outcome.
    return printOutcome(await client.follow(taskId), line.values.json === true);
  },
});
