/** `backchannel show <id>`: one task's details. */
import { choicesList, questionContext } from '../../model/questions.js';
import { partialResultOf, stateInWords } from '../../model/states.js';
import { waitingForTools } from '../../model/tools.js';
import type { TaskSnapshot } from '../../model/task.js';
import { describeBudget, describeUsage } from '../../model/usage.js';
import { EXIT } from '../command.js';
import { writeText } from '../terminal-text.js';
import { taskCommand } from '../run/client-command.js';

/** How much of a result `show` prints on its own; the rest is a command away (a 10 MB result would flood the terminal). */
const SHOWN_RESULT_CHARS = 4000;

const HELP = `Usage: backchannel show <id> [--json]

Shows one task of the running hub (or of the history on disk): state, progress, result or failure.
The id may be abbreviated: its short id (the last 12 hex digits, or any unique end of them) or a
unique start of it.

Options:
  --json        the task's snapshot and log as one JSON object, with the whole result
  -h, --help    show this help

A result longer than ${SHOWN_RESULT_CHARS} characters is shown from its beginning, with the command that gives all of it.`;

/** The result's beginning, and how to get all of it when it is longer. */
function resultText(id: string, text: string): string {
  if (text.length <= SHOWN_RESULT_CHARS) return text;
  // At a line's end when one is near the limit; inside a long line (a big string) at the limit.
  const lineEnd = text.lastIndexOf('\n', SHOWN_RESULT_CHARS);
  const shown = text.slice(0, lineEnd > SHOWN_RESULT_CHARS * 0.75 ? lineEnd : SHOWN_RESULT_CHARS);
  return `${shown}\n… ${text.length - shown.length} more characters of ${text.length}: the whole result with \`backchannel wait --json ${id}\` or \`backchannel show --json ${id}\``;
}

export const command = taskCommand({
  name: 'show',
  help: HELP,
  options: { json: { type: 'boolean' } },
  positionals: [1, 1],
  history: true,
  async run({ line, client, id }) {
    const details = await client.getTask(await id());
    const { task } = details;
    // A big result is kept on disk and only summarised in the snapshot: fetched whole here.
    const result = task.result ?? (task.resultSummary ? ((await client.taskResult(task.id)) ?? undefined) : undefined);
    if (line.values.json) {
      process.stdout.write(JSON.stringify(result ? { ...details, task: { ...task, result } } : details) + '\n');
      return EXIT.ok;
    }
    const fields: Array<[string, unknown]> = [
      ['id', task.id],
      ['label', task.label],
      // As `tasks` says it (`needs answer` while a question waits); the reason only where it says more
      // than the state (`cancelled`, not `cancelled (cancelled)`).
      ['state', task.reason && task.reason !== task.state ? `${task.state} (${task.reason})` : stateInWords(task)],
      ['progress', task.progress === undefined ? undefined : `${task.progress}%`],
      ['attempt', `${task.attempt} of ${task.maxAttempts}`],
      ['usage', task.usage ? describeUsage(task.usage) : undefined],
      ['budget', task.budget ? describeBudget(task.budget) : undefined],
      ['annotations', task.annotations ? JSON.stringify(task.annotations) : undefined],
      ['command', [task.command, ...task.args].join(' ')],
      ['cwd', task.cwd],
      ['worker', task.worker],
      ['created', task.createdAt],
      ['ended', task.endedAt],
      ['message', task.message],
      ['question', task.pendingQuestion?.question],
      ['context', task.pendingQuestion ? questionContext(task.pendingQuestion) : undefined],
      ['choices', task.pendingQuestion?.choices?.length ? choicesList(task.pendingQuestion.choices) : undefined],
      [
        'answer with',
        task.pendingQuestion
          ? `backchannel answer ${task.id} ${task.pendingQuestion.choices?.length ? '<choice or its number>' : '<text>'}`
          : undefined,
      ],
      ['waiting', waitingOn(task)],
      ['last partial', task.lastPartial === undefined || task.endedAt ? undefined : JSON.stringify(task.lastPartial)],
    ];
    // Agent text (label, message, question, stderr, result strings) is neutralised on a terminal; --json stays exact.
    const print = (text: string): void => writeText(process.stdout, text);
    for (const [name, value] of fields) if (value !== undefined) print(`${name.padEnd(12)} ${String(value)}\n`);
    // What a stopped task had produced, kept with its failure (model/task.ts PartialResult).
    const partial = partialResultOf({ ...task, result });
    if (partial) print(`partial result\n${resultText(task.id, JSON.stringify(partial, null, 2))}\n`);
    else if (result) print(`result\n${resultText(task.id, JSON.stringify(result, null, 2))}\n`);
    if (task.stderrTail) print(`stderr (last lines)\n${task.stderrTail}\n`);
    return EXIT.ok;
  },
});

/** `waiting for Read, Write (2 calls, the first since <time>)` while the task waits on its caller's tools. */
function waitingOn(task: TaskSnapshot): string | undefined {
  const calls = task.pendingToolCalls;
  const waiting = waitingForTools(calls);
  if (!waiting || !calls) return undefined;
  return `${waiting} (${calls.length === 1 ? '1 call' : `${calls.length} calls, the first`} since ${calls[0]!.calledAt})`;
}
