/** `backchannel cancel <id>`: cancels a queued or running task of the hub. */
import { EXIT } from '../command.js';
import { taskCommand } from '../run/client-command.js';

const HELP = `Usage: backchannel cancel <id>

Cancels a queued or running task of the running hub: the agent gets a cancel message, then a grace
period, then its process group is killed. The id may be abbreviated.`;

export const command = taskCommand({
  name: 'cancel',
  help: HELP,
  options: {},
  positionals: [1, 1],
  history: false,
  async run({ client, id }) {
    const taskId = await id();
    await client.cancel(taskId);
    process.stdout.write(`cancelling ${taskId}\n`);
    return EXIT.ok;
  },
});
