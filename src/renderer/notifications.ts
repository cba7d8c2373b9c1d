/**
 * The headless panel's notifications through the browser's Notification API: a subscriber of the one
 * notification decision (../notify/events.ts), run here over the panel's event stream since the page
 * is another process, with the desktop app's words (../notify/notices.ts); shown only when the person turned them on with the
 * bell in the header and the browser allowed them. Guarantees:
 * - permission is asked only from the bell's click (browsers ignore or block it otherwise);
 * - the choice is remembered in localStorage (NOTIFY_SETTING) and honoured on the next visit only
 *   while the browser still grants the permission;
 * - every task update goes through the decider even while notifications are off, so turning them
 *   on never replays old endings or questions;
 * - hidden in the desktop app, whose main process notifies already (no second notification).
 */
import type { BridgeEvent } from '../bridge/contract.js';
import { NotifyDecider } from '../notify/events.js';
import { noticeOf, type Notice } from '../notify/notices.js';

/** The localStorage key of the person's choice: 'on' or 'off'. */
export const NOTIFY_SETTING = 'backchannel.notifications';

export interface PanelNotifierActions {
  /** Shows the task in the panel (a notification was clicked). */
  openTask(id: string): void;
  /** Tells the person something in one line (the permission was refused). */
  toast(message: string): void;
}

export class PanelNotifier {
  readonly #decider = new NotifyDecider();
  /** Read from storage when first needed: the first paint does not wait for the page's storage. */
  #wanted: boolean | undefined;

  constructor(
    private readonly button: HTMLButtonElement,
    private readonly actions: PanelNotifierActions,
  ) {
    // Hidden (index.html) until `offer`, which shows its state.
    button.addEventListener('click', () => void this.#toggle());
  }

  /** Called with the panel's mode once known: only the headless panel offers the bell. */
  offer(mode: 'electron' | 'headless'): void {
    this.button.hidden = mode !== 'headless' || !supported();
    this.#show();
  }

  /** Every event of the bridge's stream, in order. */
  onEvent(event: BridgeEvent): void {
    const news = event.full ? this.#decider.picture(event.tasks) : event.tasks.flatMap((task) => this.#decider.next(task));
    for (const announcement of news) {
      const notice = noticeOf(announcement);
      if (notice) this.#notify(notice);
    }
  }

  get #on(): boolean {
    this.#wanted ??= readSetting() === 'on';
    return this.#wanted && supported() && Notification.permission === 'granted';
  }

  async #toggle(): Promise<void> {
    if (this.#on) return this.#set(false);
    if (!supported()) return;
    const permission = Notification.permission === 'default' ? await Notification.requestPermission() : Notification.permission;
    if (permission === 'granted') this.#set(true);
    else this.actions.toast('Notifications are blocked for this page: allow them in the browser’s site settings');
  }

  #set(wanted: boolean): void {
    this.#wanted = wanted;
    try {
      localStorage.setItem(NOTIFY_SETTING, wanted ? 'on' : 'off');
    } catch {
      // Storage refused (a private window's quota): the choice holds until the page is closed.
    }
    this.#show();
  }

  #show(): void {
    const on = this.#on;
    this.button.setAttribute('aria-pressed', String(on));
    this.button.title = on
      ? 'Notifications are on: a task that ends or needs an answer notifies you. Click to turn them off.'
      : 'Notify me when a task ends or needs an answer';
  }

  #notify(notice: Notice): void {
    if (!this.#on) return;
    const notification = new Notification(notice.title, {
      body: notice.body,
      silent: notice.silent,
      tag: `${notice.taskId}:${notice.kind}`,
    });
    notification.onclick = () => {
      window.focus();
      this.actions.openTask(notice.taskId);
      notification.close();
    };
  }
}

function supported(): boolean {
  return typeof window.Notification === 'function';
}

function readSetting(): string | null {
  try {
    return localStorage.getItem(NOTIFY_SETTING);
  } catch {
    return null;
  }
}
