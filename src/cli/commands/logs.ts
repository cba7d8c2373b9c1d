/** `backchannel logs [-f] <id>`: a task's log lines; `-f` follows them until the task ends. */
import { EXIT } from '../command.js';
import { followTask, LogPrinter } from '../run/remote.js';
import { taskCommand } from '../run/task-command.js';

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
  async run({ line, open, id }) {
    const taskId = await id();
    const printer = new LogPrinter(open.bridge, taskId, (text) => process.stdout.write(text + '\n'));
    await printer.pull();
    if (!line.values.follow || !open.hub) return EXIT.ok;
    // One pull at a time, in order: a change during a pull schedules one more.
    let pulling = Promise.resolve();
    await followTask(open.hub, taskId, () => {
      pulling = pulling.then(() => printer.pull());
    });
    await pulling;
    await printer.pull();
    return EXIT.ok;
  },
});
