/** `backchannel answer <id> <text>`: answers the question a sub-agent asked. */
import { EXIT, usageError } from '../command.js';
import { taskCommand } from '../run/client-command.js';

const HELP = `Usage: backchannel answer <id> <text>

Answers the pending question (\`ask\`) of a task of the running hub. The id may be abbreviated;
\`backchannel show <id>\` shows the question and its choices. A question with choices takes one of
them, or its number (1 for the first); anything else is refused with the list.`;

export const command = taskCommand({
  name: 'answer',
  help: HELP,
  options: {},
  positionals: [1, 2],
  history: false,
  async run({ line, client, id }) {
    if (line.positionals[1] === undefined) return usageError('backchannel answer: missing the answer text', HELP);
    const taskId = await id();
    const { task } = await client.getTask(taskId);
    if (!task.pendingQuestion) throw new Error(`task ${taskId} is not waiting for an answer (${task.state})`);
    await client.answer(taskId, task.pendingQuestion.askId, line.positionals[1]!, 'cli');
    process.stdout.write(`answered ${taskId}\n`);
    return EXIT.ok;
  },
});
