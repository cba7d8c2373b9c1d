/**
 * The one notification vocabulary, and the one decision of what is news. Every channel — webhooks,
 * the desktop app's notifications, the headless panel's browser notifications — is told the same
 * announcements and picks what it shows. Plain code over the task model: it runs in the hub and in
 * the browser panel alike (no Node, no DOM).
 *
 * Events:
 * - `ended`: a task finished (succeeded, failed, interrupted or cancelled), once per task; a task
 *   that waits — on a question or on its caller's tool calls — never ends here;
 * - `budget_exceeded`: it ended over its budget (told right after its `ended`);
 * - `needs_input`: it asked a question and waits for a person, once per question (`askId`), only
 *   while it has not ended; `approval` when the question is an ACP agent's permission request;
 * - `schedule_skipped`: the hub's scheduler skipped a fire (not a task's event: the hub tells it).
 * Tool calls waiting on the caller are never news: the caller is a program that answers them itself.
 */
import { isFinished, type TaskSnapshot } from '../model/task.js';

/** What a channel may be told. */
export const NOTIFY_EVENTS = ['ended', 'needs_input', 'budget_exceeded', 'schedule_skipped'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** A skipped fire of a schedule, as `schedule_skipped` tells it (times in ms since the epoch). */
export interface ScheduleSkip {
  schedule: string;
  at: number;
  /** When the record stands for a run of skipped fires: the last one, and how many (when known). */
  until?: number;
  count?: number;
  reason: 'overlap' | 'paused' | 'hub_down' | 'budget_spent' | 'refused';
}

/** One event of the vocabulary with what it is about. */
export type Announcement =
  | { type: 'ended' | 'budget_exceeded'; task: TaskSnapshot }
  | { type: 'needs_input'; task: TaskSnapshot; askId: string; approval: boolean }
  | { type: 'schedule_skipped'; skip: ScheduleSkip };

/** The announcements about a task. */
export type TaskAnnouncement = Exclude<Announcement, { type: 'schedule_skipped' }>;

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

/** What `task`'s snapshot announces, ignoring what was told before. */
function announcementsOf(task: TaskSnapshot): TaskAnnouncement[] {
  if (isFinished(task.state)) {
    const ended: TaskAnnouncement[] = [{ type: 'ended', task }];
    if (task.reason === 'budget_exceeded') ended.push({ type: 'budget_exceeded', task });
    return ended;
  }
  const question = task.pendingQuestion;
  return question ? [{ type: 'needs_input', task, askId: question.askId, approval: question.approval !== undefined }] : [];
}

/**
 * Feed it every new snapshot of a task (the hub's broker updates, or the panel's events); it returns
 * what is news, once. See the file header.
 */
export class NotifyDecider {
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
   * a reconnect). The first is what was there before watching began: all known, nothing news. A
   * later one tells what changed for tasks seen before; tasks new to the decider there are known,
   * not news (the picture mixes them with history).
   */
  picture(tasks: readonly TaskSnapshot[]): TaskAnnouncement[] {
    const first = !this.#pictured;
    this.#pictured = true;
    const news: TaskAnnouncement[] = [];
    for (const task of tasks) {
      if (first || !this.#told.has(task.id)) this.known([task]);
      else news.push(...this.next(task));
    }
    return news;
  }

  /** What `task`'s snapshot announces, once; empty for anything already told or not news. */
  next(task: TaskSnapshot): TaskAnnouncement[] {
    const told = this.#told.get(task.id) ?? { ended: false };
    if (told.ended) return [];
    const news = announcementsOf(task);
    const [first] = news;
    if (!first) return [];
    if (first.type === 'needs_input') {
      if (first.askId === told.askId) return [];
      this.#remember(task.id, { ended: false, askId: first.askId });
    } else this.#remember(task.id, { ended: true });
    return news;
  }

  #remember(id: string, told: Told): void {
    this.#told.delete(id);
    this.#told.set(id, told);
    if (this.#told.size > this.memory) this.#told.delete(this.#told.keys().next().value!);
  }
}
