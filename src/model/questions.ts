/**
 * What a person needs beside a sub-agent's question to answer it in context. A coding task's question
 * says where it stands (its branch and the files it has changed so far); every front-end (the panel,
 * the terminal, notifications, MCP) shows it in these words.
 */
import type { PendingQuestion } from './task.js';

/** "On branch backchannel/01a2327f; changed so far: src/a.ts, README.md", or undefined for a task without a worktree. */
export function questionContext(question: Pick<PendingQuestion, 'worktree'>): string | undefined {
  const where = question.worktree;
  if (!where) return undefined;
  return `On branch ${where.branch}; changed so far: ${where.files.length ? where.files.join(', ') : 'nothing'}`;
}

/**
 * What answering `question` with `text` sends the agent: free text when the question has no choices;
 * otherwise one of the choices, given as itself (exactly, or ignoring case and surrounding blanks) or
 * by its number as `choicesList` prints it (1 for the first). Anything else is refused with the list,
 * so a person who typed "2" never sends the agent the answer "2" by mistake.
 */
export function choiceAnswer(question: Pick<PendingQuestion, 'choices'>, text: string): { answer: string } | { refused: string } {
  const choices = question.choices;
  if (!choices?.length) return { answer: text };
  const wanted = text.trim();
  const exact = choices.find((choice) => choice === text) ?? choices.find((choice) => choice.trim().toLowerCase() === wanted.toLowerCase());
  if (exact !== undefined) return { answer: exact };
  const number = /^\d+$/.test(wanted) ? Number(wanted) : NaN;
  if (number >= 1 && number <= choices.length) return { answer: choices[number - 1]! };
  return { refused: `${JSON.stringify(text)} is not one of the choices: ${choicesList(choices)}` };
}

/** `1. "Yes", 2. "No"`: the choices with the numbers `choiceAnswer` accepts, each quoted. */
export function choicesList(choices: readonly string[]): string {
  return choices.map((choice, i) => `${i + 1}. ${JSON.stringify(choice)}`).join(', ');
}
