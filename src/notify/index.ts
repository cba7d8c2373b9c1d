/**
 * Notifications a hub sends from the config file's `notify:` section: today, webhooks
 * (./webhooks.ts). `watchWebhooks` subscribes a notifier to a broker's updates and gives the hub's
 * scheduler its `schedule_skipped`; its `stop` unsubscribes and stops the retries.
 */
import type { Logger } from '../broker/log.js';
import type { LoadedConfig } from '../config/file.js';
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';
import { parseWebhooks } from './config.js';
import { WebhookNotifier, type ScheduleSkip } from './webhooks.js';

export { NOTIFY_EVENTS, parseWebhooks, type NotifyEvent, type WebhookTarget } from './config.js';
export { WebhookNotifier, RETRY_DELAYS_MS, type ScheduleSkip, type ScheduleSkippedBody, type WebhookBody } from './webhooks.js';

interface UpdateSource {
  on(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  off(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  get(id: string): TaskSnapshot | undefined;
}

/** The config's webhooks: `stop` unsubscribes and ends the retries; `scheduleSkipped` sends a skipped fire. */
export interface WebhookWatch {
  stop(): void;
  scheduleSkipped(skip: ScheduleSkip): void;
}

/** The config's webhooks fed from `broker`'s updates; throws the section's one-line error. */
export function watchWebhooks(broker: UpdateSource, config: LoadedConfig, logger: Logger): WebhookWatch {
  const targets = parseWebhooks(config.sections.notify, config.path);
  if (targets.length === 0) return { stop: () => {}, scheduleSkipped: () => {} };
  const notifier = new WebhookNotifier({ targets, logger, snapshot: (id) => broker.get(id) });
  broker.on('update', notifier.onUpdate);
  logger.info(`notify: ${targets.length} webhook(s) configured`);
  return {
    stop: () => {
      broker.off('update', notifier.onUpdate);
      notifier.close();
    },
    scheduleSkipped: notifier.scheduleSkipped,
  };
}
