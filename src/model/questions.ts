/**
 * What a person needs beside a sub-agent's question to answer it in context. A coding task's question
 * says where it stands (its branch and the files it has changed so far); every front-end (the panel,
 * the terminal, notifications, MCP) shows it in these words.
 */
import type { ApprovalContext } from '../protocol/index.js';
import type { PendingQuestion } from './task.js';

/**
 * "On branch backchannel/01a2327f; changed so far: src/a.ts, README.md" for a coding task, and for an
 * approval what it concerns ("edit tool call: Write a.ts; target: /w/a.ts"); undefined when neither.
 */
export function questionContext(question: Pick<PendingQuestion, 'worktree' | 'approval'>): string | undefined {
  const where = question.worktree;
  const parts = [
    where ? `On branch ${where.branch}; changed so far: ${where.files.length ? where.files.join(', ') : 'nothing'}` : undefined,
    question.approval ? approvalContext(question.approval) : undefined,
  ].filter((part) => part !== undefined);
  return parts.length ? parts.join('; ') : undefined;
}

/** What an approval's tool call acts on: its command, else its paths ('' when it names neither). */
export function approvalTarget(approval: ApprovalContext): string {
  return approval.command ?? (approval.locations ?? []).join(', ');
}

/** "needs approval: <tool> <target>": an approval in one line (the notifications' words). */
export function approvalLine(approval: ApprovalContext): string {
  const target = approvalTarget(approval);
  const tool = approval.title || approval.kind;
  return `needs approval: ${tool}${target && !tool.includes(target) ? ` ${target}` : ''}`;
}

/** "edit tool call: Write a.ts; target: /w/a.ts" (and when the agent never announced it). */
function approvalContext(approval: ApprovalContext): string {
  const target = approvalTarget(approval);
  const unannounced = approval.unannounced ? ' (never announced by the agent)' : '';
  return `${approval.kind} tool call${unannounced}: ${approval.title}${target ? `; target: ${target}` : ''}`;
}

/**
 * Where a task's meta keeps the approvals people decided: `[{tool_call_id, option_id, via, at}]`, the
 * last MAX_APPROVAL_ANSWERS of them, kept with the result in history (docs/acp.md).
 */
export const APPROVAL_ANSWERS_KEY = 'approval_answers';
export const MAX_APPROVAL_ANSWERS = 32;

/** The doors a person answers a question through (recorded with an approval's decision, docs/acp.md). */
export const ANSWER_DOORS = ['cli', 'panel', 'mcp', 'notification', 'control'] as const;
export type AnswerDoor = (typeof ANSWER_DOORS)[number];

/**
 * What answering `question` with `text` sends the agent: free text when the question has no choices;
 * otherwise one of the choices, given as itself (exactly, or ignoring case and surrounding blanks) or
 * by its number as `choicesList` prints it (1 for the first). Anything else is refused with the list,
 * so a person who typed "2" never sends the agent the answer "2" by mistake.
 */
export function choiceAnswer(
  question: Pick<PendingQuestion, 'choices' | 'approval'>,
  text: string,
): { answer: string } | { refused: string } {
  const choices = question.choices;
  if (!choices?.length) return { answer: text };
  const wanted = text.trim();
  // An approval's option may be named by its id too (`allow-once`), as the agent calls it.
  const byId = question.approval?.options.find((option) => option.option_id === wanted);
  if (byId && choices.includes(byId.name)) return { answer: byId.name };
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
