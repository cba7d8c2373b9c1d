/**
 * The channels the config file's `notify:` section can name, one entry each: the schema of its
 * entry and how it opens. A new channel is its own file (a `Channel`, ./channel.ts) and one entry here;
 * the section's shape, its one-line errors and the hub's wiring follow from this table.
 *
 *   notify:
 *     webhooks: [{ url, events, secret }]     (./config.ts, ./webhooks.ts)
 */
import * as z from 'zod/mini';
import type { Logger } from '../broker/log.js';
import { firstProblem } from '../model/shapes.js';
import type { Channel } from './channel.js';
import { WEBHOOKS } from './config.js';
import { WebhookNotifier } from './webhooks.js';

interface ChannelEntry<S extends z.ZodMiniType> {
  schema: S;
  open(config: z.infer<S>, logger: Logger): Channel;
}

const entry = <S extends z.ZodMiniType>(schema: S, open: (config: z.infer<S>, logger: Logger) => Channel): ChannelEntry<S> => ({
  schema,
  open,
});

export const CHANNELS = {
  webhooks: entry(WEBHOOKS, (targets, logger) => {
    logger.info(`notify: ${targets.length} webhook(s) configured`);
    return new WebhookNotifier({ targets, logger });
  }),
};

export type ChannelName = keyof typeof CHANNELS;
/** A parsed `notify:` section: each channel's entry, when given. */
export type NotifySection = { [K in ChannelName]?: z.infer<(typeof CHANNELS)[K]['schema']> };

const SECTION = z.strictObject(
  Object.fromEntries(Object.entries(CHANNELS).map(([name, channel]) => [name, z.optional(channel.schema as z.ZodMiniType)])),
);

/** The `notify:` section of `file`, checked; throws `file: notify.webhooks[0].url must be …`. */
export function parseNotify(section: Record<string, unknown> | undefined, file: string): NotifySection {
  if (section === undefined) return {};
  const parsed = z.safeParse(SECTION, section);
  if (!parsed.success) throw new Error(`${file}: ${firstProblem(parsed.error, 'notify')}`);
  return parsed.data as NotifySection;
}

/** The channels `section` names (empty lists open none). */
export function openChannels(section: NotifySection, logger: Logger): Channel[] {
  const channels: Channel[] = [];
  for (const name of Object.keys(CHANNELS) as ChannelName[]) {
    const config = section[name];
    if (config === undefined || (Array.isArray(config) && config.length === 0)) continue;
    channels.push(CHANNELS[name].open(config, logger));
  }
  return channels;
}

/** The webhooks of a `notify:` section; throws the section's one-line error. */
export function parseWebhooks(section: Record<string, unknown> | undefined, file: string): z.infer<typeof WEBHOOKS> {
  return parseNotify(section, file).webhooks ?? [];
}
