/**
 * What `backchannel run` shows while a task runs, on stderr: the live status line on a TTY (or, with
 * `--verbose` and no TTY, progress as lines), the agent's log lines with `--verbose`, retries, and a
 * prompt for the agent's questions. stdout is left to the outcome (./outcome.ts).
 */
import { createInterface } from 'node:readline/promises';
import type { TaskBroker, TaskHandle } from '../../broker/broker.js';
import type { PendingQuestion, TaskUpdate } from '../../model/task.js';
import { neutralise, writeText } from '../terminal-text.js';
import { describePartial, type ProgressLine } from './progress-line.js';

export interface UpdateViewOptions {
  /** The TTY status line; undefined without a TTY or with `--json`. */
  line: ProgressLine | undefined;
  verbose: boolean;
  json: boolean;
}

/** Shows every update of `task` until unsubscribed. */
export function showUpdates(broker: TaskBroker, task: TaskHandle, options: UpdateViewOptions): () => void {
  const { line, verbose, json } = options;
  /** A whole line on stderr, above the status line when there is one. */
  const print = (text: string) => (line ? line.print(text) : writeText(process.stderr, text + '\n'));
  return task.on('update', (update: TaskUpdate) => {
    if (update.kind === 'log' && update.line && verbose) print(`[${update.line.stream}] ${update.line.text}`);
    if (verbose && !line && (update.kind === 'started' || update.kind === 'partial')) {
      // Without a TTY there is no status line: in verbose mode, progress goes to stderr as lines.
      writeText(process.stderr, `[backchannel] ${progressText(update).trimEnd()}\n`);
    }
    if (update.kind === 'partial') line?.update(update.state, update.progress, describePartial(update.payload?.data));
    else if (update.kind !== 'log') line?.update(update.state, update.progress);
    if (update.kind === 'retrying') {
      const message = `attempt ${update.attempt} failed: ${task.snapshot().message ?? ''}; retrying`;
      if (line || !json) print(message);
    }
    if (update.kind === 'ask') void answerQuestion(broker, task.id, line);
  });
}

function progressText(update: TaskUpdate): string {
  if (update.kind === 'started') return `started attempt ${update.attempt}`;
  return `partial${update.progress !== undefined ? ` ${update.progress}%` : ''} ${describePartial(update.payload?.data)}`;
}

/** Prompts on the terminal for a question the agent asked; without a TTY the ask times out. */
async function answerQuestion(broker: TaskBroker, taskId: string, line: ProgressLine | undefined): Promise<void> {
  const question = broker.get(taskId)?.pendingQuestion;
  if (!question) return;
  const answer = await askOnTerminal(question, line, 'no terminal to answer on; it will time out');
  if (answer !== undefined) broker.answer(taskId, question.askId, answer);
}

/**
 * Asks `question` on the terminal (the status line paused meanwhile) and resolves with the answer;
 * without a TTY, prints it with `otherwise` and resolves with undefined.
 */
export async function askOnTerminal(
  question: PendingQuestion,
  line: ProgressLine | undefined,
  otherwise: string,
): Promise<string | undefined> {
  if (!process.stdin.isTTY) {
    writeText(process.stderr, `The agent asks: ${question.question} (${otherwise})\n`);
    return undefined;
  }
  line?.stop();
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const choices = question.choices?.length ? ` [${question.choices.join('/')}]` : '';
  const answer = await rl.question(neutralise(`? ${question.question}${choices} `));
  rl.close();
  line?.start();
  return answer;
}
