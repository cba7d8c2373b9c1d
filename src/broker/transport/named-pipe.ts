/**
 * Windows named-pipe endpoints: `\\.\pipe\backchannel-<random>`. Pipe names are world-visible, so the
 * per-task token is the guard; a pipe leaves nothing behind when its server closes.
 */
import { randomName } from './names.js';
import type { EndpointAddress } from './task-endpoint.js';

export function namedPipeAddress(): EndpointAddress {
  return { path: `\\\\.\\pipe\\backchannel-${randomName()}`, secure: () => {}, remove: () => {} };
}
