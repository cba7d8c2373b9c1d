/**
 * A notification channel: what the hub's notifications (./index.ts) tell every announcement of the one
 * vocabulary (./events.ts). It picks the events it shows and must return at once (a channel that
 * delivers over the network queues and sends in the background); `close` stops it.
 */
import type { Announcement } from './events.js';

export interface Channel {
  announce(announcement: Announcement): void;
  close(): void;
}
