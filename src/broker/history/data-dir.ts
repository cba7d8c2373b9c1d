/**
 * The data directory (history journal, logs) gets the endpoint directory's rules: a directory, not a
 * symlink, owned by us, not writable by group or others. Anyone who could write there could forge
 * history (a Retry then runs their command as us) or plant symlinks that make us overwrite our files.
 * Files inside are opened with O_NOFOLLOW; temporary files are created with O_EXCL and random names.
 */
import { constants, lstatSync, mkdirSync } from 'node:fs';
import { BrokerError } from '../errors.js';

/** Flags for files in a data directory: never follow a symlink planted in place of the file. */
export const NO_FOLLOW = process.platform === 'win32' ? 0 : constants.O_NOFOLLOW;

/** Creates `dir` (0700) or checks an existing one; throws a BrokerError saying what is wrong and what to do. */
export function ensureDataDir(dir: string, what = 'Data directory'): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.platform === 'win32') return;
  const stat = lstatSync(dir);
  const refuse = (why: string) => {
    throw new BrokerError(
      'data_dir',
      `${what} ${dir} ${why}; history and logs are only kept in a directory of your own. Fix it or choose another.`,
    );
  };
  if (!stat.isDirectory()) refuse('is not a directory (a symlink?)');
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) refuse(`belongs to uid ${stat.uid}, not to us`);
  if ((stat.mode & 0o022) !== 0)
    refuse(`is writable by ${stat.mode & 0o002 ? 'everyone' : 'its group'} (mode ${(stat.mode & 0o777).toString(8)})`);
}
