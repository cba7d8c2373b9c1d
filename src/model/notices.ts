/**
 * Which task changes make a notification, and what it says: the one decision behind the desktop
 * app's notifications (src/main/notifier.ts shows them) and the browser panel's (src/renderer). Plain
 * code, no Electron, no DOM. Guarantees, per `NoticeDecider`:
 * - a task that ended makes exactly one notice, whose title says how: "Succeeded", "Failed" or
 *   "Cancelled" (never an unqualified "done");
 * - a question makes one "Needs an answer" notice per question (per `askId`), and only while the task
 *   has not ended;
 * - a task that waits — on a question, or on its caller's tool calls — never makes an "ended" notice:
 *   only a finished state does. Tool calls waiting on the caller make no notice at all: the caller is
 *   a program (the gateway's client, an MCP client) that answers them itself; a person cannot.
 * - the decider remembers a bounded number of tasks (NOTICE_MEMORY), oldest forgotten first.
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

/**
 * Tasks the decider remembers. A task is forgotten only after this many newer ones were seen, long
 * after its ending was told; 10,000 small records are well under a megabyte.
 */
export const NOTICE_MEMORY = 10_000;

/** What was told about one task: that it ended, and the last question asked. */
interface Told {
  ended: boolean;
  askId?: string;
}

/**
 * Feed it every new snapshot of a task (from the broker's updates or the panel's events); it returns
 * the notice to show, or undefined when there is nothing new to tell. See the file header.
 */
export class NoticeDecider {
  readonly #told = new Map<string, Told>();
  #pictured = false;

  constructor(private readonly memory = NOTICE_MEMORY) {}

  /**
   * Tasks that were already there when watching began (the panel's first picture): their ending or
   * question is not news, so later snapshots of them tell only what changes after.
   */
  known(tasks: Iterable<TaskSnapshot>): void {
    for (const task of tasks) this.#remember(task.id, { ended: isFinished(task.state), askId: task.pendingQuestion?.askId });
  }

  /**
   * A full picture of the tasks (the panel's event stream sends one on connecting, and again after
   * a reconnect). The first is what was there before watching began: all known, no notices. A later
   * one tells what changed for tasks seen before; tasks new to the decider there are known, not news
   * (the picture mixes them with history, so a task that started and ended while the panel was
   * disconnected goes unannounced).
   */
  picture(tasks: readonly TaskSnapshot[]): Notice[] {
    const first = !this.#pictured;
    this.#pictured = true;
    const notices: Notice[] = [];
    for (const task of tasks) {
      if (first || !this.#told.has(task.id)) this.known([task]);
      else {
        const notice = this.next(task);
        if (notice) notices.push(notice);
      }
    }
    return notices;
  }

  /** The notice `task`'s snapshot makes, once; undefined for anything already told or not news. */
  next(task: TaskSnapshot): Notice | undefined {
    const told = this.#told.get(task.id) ?? { ended: false };
    if (told.ended) return undefined;
    const ended = endedNotice(task);
    if (ended) {
      this.#remember(task.id, { ended: true });
      return ended;
    }
    const asked = questionNotice(task);
    if (!asked || asked.answers?.askId === told.askId) return undefined;
    this.#remember(task.id, { ended: false, askId: asked.answers?.askId });
    return asked;
  }

  #remember(id: string, told: Told): void {
    this.#told.delete(id);
    this.#told.set(id, told);
    if (this.#told.size > this.memory) this.#told.delete(this.#told.keys().next().value!);
  }
}
