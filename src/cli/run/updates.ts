/**
 * What `backchannel run` shows while a task runs, on stderr: the live status line on a TTY (or, with
 * `--verbose` and no TTY, progress as lines), the agent's log lines with `--verbose`, retries, and a
 * prompt for the agent's questions. stdout is left to the outcome (./outcome.ts).
 */
import { createInterface } from 'node:readline/promises';
import type { TaskRun } from '../../client/index.js';
import type { PendingQuestion, TaskUpdate } from '../../model/task.js';
import { neutralise, writeText } from '../terminal-text.js';
import { describePartial } from '../../model/states.js';
import { describeSpend } from '../../model/usage.js';
import { choiceAnswer, choicesList, questionContext } from '../../model/questions.js';
import type { ProgressLine } from './progress-line.js';

export interface UpdateViewOptions {
  /** The TTY status line; undefined without a TTY or with `--json`. */
  line: ProgressLine | undefined;
  verbose: boolean;
  json: boolean;
  /** How long a question waits for an answer (said at once when nobody can answer on this terminal). */
  askTimeoutMs: number;
}

/** Shows every update of `task` until unsubscribed. */
export function showUpdates(task: TaskRun, options: UpdateViewOptions): () => void {
  const { line, verbose, json, askTimeoutMs } = options;
  /** A whole line on stderr, above the status line when there is one. */
  const print = (text: string) => (line ? line.print(text) : writeText(process.stderr, text + '\n'));
  return task.on('update', (update: TaskUpdate) => {
    if (update.kind === 'log' && update.line && verbose) print(`[${update.line.stream}] ${update.line.text}`);
    if (verbose && !line && (update.kind === 'started' || update.kind === 'partial')) {
      // Without a TTY there is no status line: in verbose mode, progress goes to stderr as lines.
      writeText(process.stderr, `[backchannel] ${progressText(update).trimEnd()}\n`);
    }
    if (update.kind === 'partial') line?.update(update.state, update.progress, describePartial(update.payload?.data), spendOf(task));
    else if (update.kind !== 'log') line?.update(update.state, update.progress, undefined, spendOf(task));
    if (update.kind === 'retrying') {
      const message = `attempt ${update.attempt} failed: ${task.snapshot().message ?? ''}; retrying`;
      if (line || !json) print(message);
    }
    if (update.kind === 'ask') void answerQuestion(task, line, askTimeoutMs);
  });
}

/** Its usage against its budget, as the README promises it: "shown live". */
function spendOf(task: TaskRun): string {
  try {
    const { usage, budget } = task.snapshot();
    return describeSpend(usage, budget);
  } catch {
    return ''; // not reported by its broker yet
  }
}

function progressText(update: TaskUpdate): string {
  if (update.kind === 'started') return `started attempt ${update.attempt}`;
  return `partial${update.progress !== undefined ? ` ${update.progress}%` : ''} ${describePartial(update.payload?.data)}`;
}

/**
 * Prompts on the terminal for a question the agent asked. Without a TTY nobody can answer here: say at
 * once how long the question waits and how to answer it from elsewhere.
 */
async function answerQuestion(task: TaskRun, line: ProgressLine | undefined, askTimeoutMs: number): Promise<void> {
  const question = task.snapshot().pendingQuestion;
  if (!question) return;
  // A coding task's question says where it stands.
  const where = questionContext(question);
  if (where) writeText(process.stderr, `(${where})\n`);
  if (!process.stdin.isTTY) {
    process.stderr.write(unansweredNotice(task.id, question.question, question.choices, askTimeoutMs) + '\n');
    return;
  }
  const answer = await askOnTerminal(question, line, 'no terminal to answer on; it will time out');
  if (answer !== undefined)
    await task.answer(question.askId, answer, 'cli').catch((error: Error) => writeText(process.stderr, `${error.message}\n`));
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
  try {
    // A question with choices takes one of them or its number; anything else asks again, a bounded number of times.
    for (let tries = 0; tries < MAX_TERMINAL_TRIES; tries++) {
      const text = await rl.question(neutralise(`? ${question.question}${numberedChoices(question.choices)} `));
      const chosen = choiceAnswer(question, text);
      if ('answer' in chosen) return chosen.answer;
      writeText(process.stderr, `${chosen.refused}\n`);
    }
    writeText(process.stderr, `No answer given (${MAX_TERMINAL_TRIES} tries); answer later with: backchannel answer <id> <choice>\n`);
    return undefined;
  } finally {
    rl.close();
    line?.start();
  }
}

/** How many times the terminal asks again after an answer that is not a choice. */
const MAX_TERMINAL_TRIES = 5;

/** ` [1. "Yes", 2. "No"]` after a question on the terminal, where a choice's number is an answer; empty without choices. */
function numberedChoices(choices: readonly string[] | undefined): string {
  return choices?.length ? ` [${choicesList(choices)}]` : '';
}

/** What `run` says when the agent asks and stdin is not a terminal. */
export function unansweredNotice(taskId: string, question: string, choices: string[] | undefined, askTimeoutMs: number): string {
  return [
    `The agent asks: ${question}${choicesText(choices)}`,
    `  No terminal to answer on (stdin is not a TTY): the question waits ${formatWait(askTimeoutMs)} (--ask-timeout), then the agent gets no answer.`,
    `  Answer from another shell: backchannel answer ${taskId} <text>`,
  ].join('\n');
}

/**
 * ` (choices: "JavaScript/TypeScript", "Python")`: each choice quoted, so one holding a `/` or a
 * comma still reads as one; empty without choices.
 */
export function choicesText(choices: readonly string[] | undefined): string {
  return choices?.length ? ` (choices: ${choices.map((choice) => JSON.stringify(choice)).join(', ')})` : '';
}

function formatWait(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000) return `${Math.round(ms / 100) / 10} s`;
  return `${ms} ms`;
}
