/**
 * The hub's notifications: fed once by the hub assembly (src/hub/assemble.ts) — the broker's task
 * updates and the scheduler's skipped fires — they decide once what is news (./events.ts) and tell
 * every subscriber: the config's channels (./channels.ts: webhooks) and whoever else subscribes (the
 * desktop app's system notifications). The headless panel runs the same decision over its own event
 * stream in the browser (src/renderer/notifications.ts). `close` unsubscribes from the broker and
 * closes the channels.
 */
import type { Logger } from '../broker/log.js';
import type { LoadedConfig } from '../config/file.js';
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';
import type { Channel } from './channel.js';
import { openChannels, parseNotify } from './channels.js';
import { NotifyDecider, type Announcement, type ScheduleSkip } from './events.js';

export { NOTIFY_EVENTS, NotifyDecider, type Announcement, type NotifyEvent, type ScheduleSkip, type TaskAnnouncement } from './events.js';
export { CHANNELS, parseNotify, parseWebhooks, type NotifySection } from './channels.js';
export type { Channel } from './channel.js';
export type { WebhookTarget } from './config.js';
export { WebhookNotifier, RETRY_DELAYS_MS, type ScheduleSkippedBody, type WebhookBody } from './webhooks.js';

/** Where task updates come from: the broker. */
export interface UpdateSource {
  on(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  off(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  get(id: string): TaskSnapshot | undefined;
}

/** A subscriber: told every announcement, in order; it must return at once. */
export type Subscriber = (announcement: Announcement) => void;

export class Notifications {
  readonly #decider = new NotifyDecider();
  readonly #subscribers = new Set<Subscriber>();
  readonly #channels: Channel[];
  #closed = false;

  constructor(
    private readonly source: UpdateSource,
    private readonly logger: Logger,
    channels: readonly Channel[] = [],
  ) {
    this.#channels = [...channels];
    for (const channel of channels) this.#subscribers.add(channel.announce);
    source.on('update', this.#onUpdate);
  }

  /** Tells `subscriber` every announcement from now on; returns what unsubscribes it. */
  subscribe(subscriber: Subscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  /** A fire the hub's scheduler recorded as skipped. */
  readonly scheduleSkipped = (skip: ScheduleSkip): void => this.#tell({ type: 'schedule_skipped', skip });

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.source.off('update', this.#onUpdate);
    this.#subscribers.clear();
    for (const channel of this.#channels) channel.close();
  }

  readonly #onUpdate = (update: TaskUpdate): void => {
    // Only an ending or a question can be news; other updates cost no snapshot.
    if (update.kind !== 'ended' && update.kind !== 'ask') return;
    const task = this.source.get(update.taskId);
    if (task) for (const announcement of this.#decider.next(task)) this.#tell(announcement);
  };

  #tell(announcement: Announcement): void {
    if (this.#closed) return;
    for (const subscriber of this.#subscribers) {
      try {
        subscriber(announcement);
      } catch (error) {
        this.logger.error(`notify: a subscriber failed on ${announcement.type}:`, error);
      }
    }
  }
}

/** The hub's notifications over `source`, with the config's channels; throws the `notify:` section's one-line error. */
export function openNotifications(source: UpdateSource, config: LoadedConfig, logger: Logger): Notifications {
  const section = parseNotify(config.sections.notify, config.path);
  return new Notifications(source, logger, openChannels(section, logger));
}
