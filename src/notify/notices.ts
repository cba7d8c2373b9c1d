/**
 * What a person's notification shows for an announcement (./events.ts): the desktop app's system
 * notifications (src/main/notifier.ts) and the headless panel's browser ones (src/renderer) both
 * subscribe through this. An ending and a question make a notice in ../model/notices.ts's words;
 * `budget_exceeded` makes none of its own (its `ended` already says "Failed: … over budget"), nor does
 * `schedule_skipped` (a webhook's business). Plain code: runs in the browser too.
 */
import { endedNotice, questionNotice, type Notice } from '../model/notices.js';
import type { Announcement } from './events.js';

export type { Notice } from '../model/notices.js';

/** The notice `announcement` makes, or undefined when a person's notification does not show it. */
export function noticeOf(announcement: Announcement): Notice | undefined {
  if (announcement.type === 'ended') return endedNotice(announcement.task);
  if (announcement.type === 'needs_input') return questionNotice(announcement.task);
  return undefined;
}
