/** `backchannel logs [-f] <id>`: a task's log lines; `-f` follows them until the task ends. */
import { EXIT } from '../command.js';
import { writeText } from '../terminal-text.js';
import { isHubLost } from '../../client/index.js';
import { LogPrinter } from '../run/log-printer.js';
import { taskCommand } from '../run/client-command.js';

const HELP = `Usage: backchannel logs [-f] <id>

Prints a task's log (its stdout and stderr lines and the broker's notes). The id may be abbreviated.

Options:
  -f, --follow  keep printing new lines until the task ends (needs the running hub)
  -h, --help    show this help`;

export const command = taskCommand({
  name: 'logs',
  help: HELP,
  options: { follow: { type: 'boolean', short: 'f' } },
  positionals: [1, 1],
  history: true,
  async run({ line, client, id }) {
    const taskId = await id();
    const printer = new LogPrinter(client, taskId, (text) => writeText(process.stdout, text + '\n'));
    await printer.pull();
    if (!line.values.follow || client.where.kind !== 'hub') return EXIT.ok;
    // One pull at a time, in order: a change during a pull schedules one more.
    let pulling = Promise.resolve();
    const task = await client.follow(taskId);
    task.on('update', () => {
      pulling = pulling.then(() => printer.pull());
    });
    await task.finished;
    // A hub that went away ends the following with its message (a finished task's own outcome does not matter here).
    await task.result.catch((error: unknown) => {
      if (isHubLost(error)) throw error;
    });
    await pulling;
    await printer.pull();
    return EXIT.ok;
  },
});
