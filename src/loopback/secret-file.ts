/**
 * A generated secret kept in a file of its own: read from `file`, or created there (mode 0600, in a 0700 directory,
 * never through a symlink) when it does not exist yet. A file another user could read or write is refused, and so
 * is an empty one. `created` says whether this call made it — the one time the caller may print it.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';

export function readOrCreateSecret(file: string, prefix: string): { secret: string; created: boolean } {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let created = false;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    created = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  }
  try {
    const stat = fstatSync(fd);
    if (process.getuid && (stat.uid !== process.getuid() || (stat.mode & 0o077) !== 0)) {
      throw new Error(`${file} must be yours and not readable by others (chmod 600 ${file})`);
    }
    if (created) {
      const secret = `${prefix}${randomBytes(24).toString('hex')}`;
      writeSync(fd, `${secret}\n`);
      return { secret, created };
    }
    const secret = readFileSync(fd, 'utf8').trim();
    if (secret === '') throw new Error(`${file} is empty: delete it to get a new one`);
    return { secret, created };
  } finally {
    closeSync(fd);
  }
}
