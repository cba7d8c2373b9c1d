/**
 * What a person's notification says about a task: the words of the desktop app's notifications
 * (src/main/notifier.ts) and the browser panel's (src/renderer). Which changes are news is decided
 * once, in src/notify/events.ts; this file only words them. Plain code, no Electron, no DOM:
 * - a task that ended says how in its title: "Succeeded", "Failed" or "Cancelled" (never an
 *   unqualified "done"); a task still working or waiting makes no ending notice;
 * - a question says "Needs an answer" (an ACP agent's approval "Needs approval") and carries its
 *   choices, or a reply field, so it can be answered on the spot.
 */
import { failureOf } from './states.js';
import { approvalLine, questionContext } from './questions.js';
import { isFinished, type TaskSnapshot } from './task.js';

export interface Notice {
  taskId: string;
  /** `ended`: the task finished (see the title for how); `needs_input`: it waits for a person's answer. */
  kind: 'ended' | 'needs_input';
  title: string;
  body: string;
  /** A success is quiet; failures and questions make a sound. */
  silent: boolean;
  /** The question this notice can answer, and how (the desktop's buttons or inline reply). */
  answers?: { askId: string; choices: string[] } | { askId: string; reply: true };
}

/** The title's first word for each way a task ends ("interrupted": the broker stopped while it ran). */
const ENDED_WORDS = { succeeded: 'Succeeded', failed: 'Failed', interrupted: 'Failed', cancelled: 'Cancelled' } as const;

/** The title's first words of a question's notice. */
export const NEEDS_ANSWER = 'Needs an answer';
/** The title's first words of an approval's notice (an ACP agent's permission request). */
export const NEEDS_APPROVAL = 'Needs approval';

/** A finished task: quiet for a success, with the failure's message for anything else. */
export function endedNotice(task: TaskSnapshot): Notice | undefined {
  if (!isFinished(task.state)) return undefined;
  const word = ENDED_WORDS[task.state as keyof typeof ENDED_WORDS];
  const ok = task.state === 'succeeded';
  return {
    taskId: task.id,
    kind: 'ended',
    title: `${word}: ${task.label}`,
    body: ok ? 'The sub-agent finished. Open the task to see the result.' : (failureOf(task)?.message ?? task.state),
    silent: ok,
  };
}

/** A sub-agent waits for an answer: the question, where a coding task stands, and a way to answer. */
export function questionNotice(task: TaskSnapshot): Notice | undefined {
  const question = task.pendingQuestion;
  if (!question || isFinished(task.state)) return undefined;
  const context = questionContext(question);
  // An approval says what it is for first: "needs approval: <tool> <target>" (docs/acp.md).
  const text = question.approval ? approvalLine(question.approval) : question.question;
  return {
    taskId: task.id,
    kind: 'needs_input',
    title: `${question.approval ? NEEDS_APPROVAL : NEEDS_ANSWER}: ${task.label}`,
    body: context ? `${text}\n${context}` : text,
    silent: false,
    answers: question.choices?.length ? { askId: question.askId, choices: question.choices } : { askId: question.askId, reply: true },
  };
}
