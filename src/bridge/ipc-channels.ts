/** IPC channel names shared by the preload (client) and the main-process handlers. */
import type { BridgeMethod } from './calls.js';

/** Every channel starts with this; the handlers refuse anything else. */
export const CHANNEL_PREFIX = 'backchannel:';
export const callChannel = (method: BridgeMethod): string => `${CHANNEL_PREFIX}call:${method}`;
/** renderer → main (send): `(subscriptionId: number)` */
export const SUBSCRIBE = `${CHANNEL_PREFIX}subscribe`;
/** renderer → main (send): `(subscriptionId: number)` */
export const UNSUBSCRIBE = `${CHANNEL_PREFIX}unsubscribe`;
/** renderer → main (send), once per page load: drop the subscriptions of the previous page. */
export const RESET = `${CHANNEL_PREFIX}reset`;
/** main → renderer: `(subscriptionId: number, event: BridgeEvent)` */
export const EVENT = `${CHANNEL_PREFIX}event`;
