/**
 * Unix-socket endpoints: one socket file (0600) per attempt inside the private 0700 directory.
 * The task id stays out of the path: it may not fit, and it need not.
 */
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { randomName } from './names.js';
import type { EndpointAddress } from './task-endpoint.js';

export const SOCKET_SUFFIX = '.sock';

export function unixSocketAddress(dir: string): EndpointAddress {
  const file = path.join(dir, randomName() + SOCKET_SUFFIX);
  return {
    path: file,
    // The directory is already 0700; 0600 on the file is defence in depth. Synchronous: one cheap
    // syscall, where the promise version costs a thread-pool round trip before every spawn.
    secure: () => chmodSync(file, 0o600),
    remove: () => removeSocketFile(file),
  };
}

/** Unlinks a socket file, ignoring "already gone". */
export function removeSocketFile(file: string): void {
  // Closing the server usually removed it already: asking first is far cheaper than the ENOENT error unlinkSync throws.
  if (!existsSync(file)) return;
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
