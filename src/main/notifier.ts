/**
 * Desktop notifications: a subscriber of the hub's notifications (../notify/index.ts), showing the
 * announcements a person sees (../notify/notices.ts: one per ending, one per question, never "done"
 * for a task that waits), nothing more. Clicking one opens that task in the panel; a
 * question's buttons or inline reply answer it on the spot. Muted once the app quits (tasks cancelled
 * by quitting are not news).
 */
import { Notification } from 'electron';
import type { Announcement } from '../notify/events.js';
import { noticeOf, type Notice } from '../notify/notices.js';

export interface NotifierActions {
  openTask(taskId: string): void;
  answer(taskId: string, askId: string, answer: string): void;
}

export class Notifier {
  #muted = false;

  constructor(private readonly actions: NotifierActions) {}

  mute(): void {
    this.#muted = true;
  }

  /** Subscribe it to the hub's notifications (`hub.notifications.subscribe(notifier.announce)`). */
  readonly announce = (announcement: Announcement): void => {
    const notice = noticeOf(announcement);
    if (notice) this.#notify(notice);
  };

  #notify(notice: Notice): void {
    if (this.#muted || !Notification.isSupported()) return;
    const { taskId, title, body, silent, answers } = notice;
    const choices = answers && 'choices' in answers ? answers.choices : [];
    const notification = new Notification({
      title,
      body,
      silent,
      actions: choices.map((text) => ({ type: 'button' as const, text })),
      ...(answers && 'reply' in answers ? { hasReply: true, replyPlaceholder: 'Answer the sub-agent…' } : {}),
    });
    notification.on('click', () => this.actions.openTask(taskId));
    if (answers) {
      notification.on('action', (details) => {
        const choice = choices[details.actionIndex];
        if (choice !== undefined) this.actions.answer(taskId, answers.askId, choice);
      });
      notification.on('reply', (details) => {
        if (details.reply.trim()) this.actions.answer(taskId, answers.askId, details.reply);
      });
    }
    notification.show();
  }
}
