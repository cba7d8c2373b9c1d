/** `backchannel show <id>`: one task's details. */
import { describeBudget, describeUsage } from '../../model/usage.js';
import { EXIT } from '../command.js';
import { writeText } from '../terminal-text.js';
import { taskCommand } from '../run/client-command.js';

const HELP = `Usage: backchannel show <id> [--json]

Shows one task of the running hub (or of the history on disk): state, progress, result or failure.
The id may be abbreviated to a unique prefix.

Options:
  --json        the task's snapshot and log as one JSON object
  -h, --help    show this help`;

export const command = taskCommand({
  name: 'show',
  help: HELP,
  options: { json: { type: 'boolean' } },
  positionals: [1, 1],
  history: true,
  async run({ line, client, id }) {
    const details = await client.getTask(await id());
    if (line.values.json) {
      process.stdout.write(JSON.stringify(details) + '\n');
      return EXIT.ok;
    }
    const { task } = details;
    const fields: Array<[string, unknown]> = [
      ['id', task.id],
      ['label', task.label],
      ['state', task.reason ? `${task.state} (${task.reason})` : task.state],
      ['progress', task.progress === undefined ? undefined : `${task.progress}%`],
      ['attempt', `${task.attempt} of ${task.maxAttempts}`],
      ['usage', task.usage ? describeUsage(task.usage) : undefined],
      ['budget', task.budget ? describeBudget(task.budget) : undefined],
      ['command', [task.command, ...task.args].join(' ')],
      ['cwd', task.cwd],
      ['created', task.createdAt],
      ['ended', task.endedAt],
      ['message', task.message],
      [
        'question',
        task.pendingQuestion ? `${task.pendingQuestion.question} (answer with: backchannel answer ${task.id} <text>)` : undefined,
      ],
      ['last partial', task.lastPartial === undefined || task.endedAt ? undefined : JSON.stringify(task.lastPartial)],
    ];
    // Agent text (label, message, question, stderr, result strings) is neutralised on a terminal; --json stays exact.
    const print = (text: string): void => writeText(process.stdout, text);
    for (const [name, value] of fields) if (value !== undefined) print(`${name.padEnd(12)} ${String(value)}\n`);
    const result = task.result ?? (task.resultSummary ? await client.taskResult(task.id) : undefined);
    if (result) print(`result\n${JSON.stringify(result, null, 2)}\n`);
    if (task.stderrTail) print(`stderr (last lines)\n${task.stderrTail}\n`);
    return EXIT.ok;
  },
});
