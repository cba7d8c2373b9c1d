/**
 * `backchannel run` and attachments: what is printed of them (name, size, encoding — never the
 * bytes) and `--save-attachments <dir>`, which writes each one to `<dir>/<name>`.
 */
import { closeSync, constants, mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withoutContent, type Payload } from '../../protocol/index.js';

/**
 * Writes every attachment of `payload` into `dir` (created if missing) and returns the payload as
 * printed: headers only, each with the `path` it was saved to. Names are plain file names (the
 * protocol checks them); an existing symlink in their place is refused, not followed.
 */
export function saveAttachments<P extends Payload>(payload: P, dir: string | undefined): P {
  const printed = withoutContent(payload);
  if (!dir || !payload.attachments?.length) return printed;
  mkdirSync(dir, { recursive: true });
  const saved = payload.attachments.map((attachment, i) => {
    const file = path.join(dir, attachment.name);
    let fd: number;
    try {
      fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code === 'ELOOP' ? 'it is a symlink (ELOOP)' : (error as Error).message;
      throw new Error(`--save-attachments: cannot write ${file}: ${why}`, { cause: error });
    }
    try {
      writeFileSync(fd, attachment.content ?? '');
    } finally {
      closeSync(fd);
    }
    return { ...printed.attachments![i]!, path: path.resolve(file) };
  });
  return { ...printed, attachments: saved };
}
