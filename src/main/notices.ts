/**
 * What a desktop notification says, without Electron (the notifier shows it): a task ended, or a
 * sub-agent asks. A question is answerable in the notification where the desktop supports it: its
 * choices as buttons, or an inline reply field for a free-text question (macOS and Windows; on Linux
 * a click opens the task with its answer box).
 */
import { failureOf } from '../model/states.js';
import { questionContext } from '../model/questions.js';
import type { TaskSnapshot } from '../model/task.js';

export interface Notice {
  taskId: string;
  title: string;
  body: string;
  silent: boolean;
  /** The question this notice can answer, and how. */
  answers?: { askId: string; choices: string[] } | { askId: string; reply: true };
}

/** A task ended: quiet for a success, with the reason for anything else. */
export function endedNotice(task: TaskSnapshot): Notice {
  const ok = task.state === 'succeeded';
  return {
    taskId: task.id,
    title: `${ok ? 'Done' : task.state === 'cancelled' ? 'Cancelled' : 'Failed'}: ${task.label}`,
    body: ok ? 'The sub-agent finished. Click to see the result.' : (failureOf(task)?.message ?? task.message ?? task.state),
    silent: ok,
  };
}

/** A sub-agent waits for an answer: the question, where a coding task stands, and a way to answer. */
export function questionNotice(task: TaskSnapshot): Notice | undefined {
  const question = task.pendingQuestion;
  if (!question) return undefined;
  const context = questionContext(question);
  return {
    taskId: task.id,
    title: `Question from ${task.label}`,
    body: context ? `${question.question}\n${context}` : question.question,
    silent: false,
    answers: question.choices?.length ? { askId: question.askId, choices: question.choices } : { askId: question.askId, reply: true },
  };
}
