/**
 * `--input <json|@file|->`: inline JSON, a JSON file, or stdin, read with a size cap so that an
 * endless source (`@/dev/zero`, a runaway pipe) ends in a clear error instead of exhausting memory.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { formatLimit, MAX_INPUT_BYTES } from '../../client/index.js';

export function readInput(value: string | undefined, maxBytes = MAX_INPUT_BYTES): unknown {
  if (value === undefined) return undefined;
  const text = value === '-' ? readBounded(0, 'stdin', maxBytes) : value.startsWith('@') ? readFile(value.slice(1), maxBytes) : value;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`--input is not valid JSON (${(error as Error).message})`, { cause: error });
  }
}

function readFile(file: string, maxBytes: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : code;
    throw new Error(`--input @${file}: cannot read ${file} (${why ?? (error as Error).message})`, { cause: error });
  }
  try {
    return readBounded(fd, file, maxBytes);
  } finally {
    closeSync(fd);
  }
}

/** Reads `fd` to its end, or throws once more than `maxBytes` arrived. */
function readBounded(fd: number, what: string, maxBytes: number): string {
  const chunks: Buffer[] = [];
  let total = 0;
  const buffer = Buffer.alloc(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buffer, 0, buffer.length, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') continue;
      if ((error as NodeJS.ErrnoException).code === 'EOF') break;
      throw error;
    }
    if (n === 0) break;
    total += n;
    if (total > maxBytes)
      throw new Error(`--input ${what} is over the ${formatLimit(maxBytes)} limit (it travels to the agent as one protocol line)`);
    chunks.push(Buffer.from(buffer.subarray(0, n)));
  }
  return Buffer.concat(chunks).toString('utf8');
}
