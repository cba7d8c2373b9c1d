/**
 * Desktop notifications: a task ended, or a sub-agent asks a question. Clicking one opens that task
 * in the panel. Muted once the app quits (tasks cancelled by quitting are not news).
 */
import { Notification } from 'electron';
import { failureOf } from '../model/states.js';
import type { TaskSnapshot } from '../model/task.js';

export class Notifier {
  #muted = false;

  constructor(private readonly openTask: (taskId: string) => void) {}

  mute(): void {
    this.#muted = true;
  }

  /** A task ended: quiet for a success, with the reason for anything else. */
  taskEnded(task: TaskSnapshot | undefined): void {
    if (!task || this.#muted) return;
    const ok = task.state === 'succeeded';
    this.#notify(task.id, {
      title: `${ok ? 'Done' : task.state === 'cancelled' ? 'Cancelled' : 'Failed'}: ${task.label}`,
      body: ok ? 'The sub-agent finished. Click to see the result.' : (failureOf(task)?.message ?? task.message ?? task.state),
      silent: ok,
    });
  }

  /** A sub-agent waits for an answer: say so, and open its task (with the answer box) on click. */
  question(task: TaskSnapshot | undefined): void {
    const question = task?.pendingQuestion;
    if (!task || !question || this.#muted) return;
    this.#notify(task.id, { title: `Question from ${task.label}`, body: question.question, silent: false });
  }

  #notify(taskId: string, options: { title: string; body: string; silent: boolean }): void {
    if (!Notification.isSupported()) return;
    const notification = new Notification(options);
    notification.on('click', () => this.openTask(taskId));
    notification.show();
  }
}
