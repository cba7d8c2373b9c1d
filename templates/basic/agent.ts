/**
 * Basic sub-agent (TypeScript, on the agent runtime SDK): surveys a directory tree — files and lines
 * per extension — reporting progress as it goes, and returns the table as structured `data`.
 *
 * Run it:   npx backchannel run --input '{"path":"src"}' -- templates/basic/agent.ts
 * Input:    { "path"?: string (default "."), "maxFiles"?: number (default 5000) }
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { runAgent } from 'backchannel-agents/agent-runtime';

interface Input {
  path?: string;
  maxFiles?: number;
  /** Set by `backchannel check` (docs/protocol.md §10): stay busy this long, and return `echo` as it came. */
  conformance?: { busy_ms?: number; echo?: string };
}

interface ExtensionStats {
  files: number;
  lines: number;
  bytes: number;
}

const SKIP = new Set(['node_modules', '.git', 'dist']);

async function listFiles(root: string, limit: number, signal: AbortSignal): Promise<string[]> {
  const files: string[] = [];
  const pending = [root];
  while (pending.length > 0 && files.length < limit) {
    signal.throwIfAborted();
    const dir = pending.pop()!;
    const entries = await orGone(readdir(dir, { withFileTypes: true }));
    for (const entry of entries ?? []) {
      if (SKIP.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) pending.push(full);
      else if (entry.isFile()) files.push(full);
    }
  }
  return files.slice(0, limit);
}

/** A directory or file that vanished between its listing and its reading (a live tree) is skipped: undefined. */
async function orGone<T>(reading: Promise<T>): Promise<T | undefined> {
  try {
    return await reading;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

runAgent<Input | null>(async (task) => {
  const root = path.resolve(task.input?.path ?? '.');
  const files = await listFiles(root, task.input?.maxFiles ?? 5000, task.signal);
  if (files.length === 0) throw new Error(`no files under ${root}`);

  const byExtension: Record<string, ExtensionStats> = {};
  let surveyed = 0;
  for (const [index, file] of files.entries()) {
    task.signal.throwIfAborted();
    const content = await orGone(readFile(file));
    if (!content) continue;
    surveyed += 1;
    const ext = path.extname(file) || '(none)';
    const stats = (byExtension[ext] ??= { files: 0, lines: 0, bytes: 0 });
    stats.files += 1;
    stats.bytes += content.length;
    for (const byte of content) if (byte === 0x0a) stats.lines += 1;
    // Progress is cheap (the SDK coalesces writes), but a few dozen updates are plenty for a person.
    if (index % Math.max(1, Math.floor(files.length / 20)) === 0) {
      task.progress(Math.round((index / files.length) * 100), { step: path.relative(root, file) });
    }
  }
  const check = task.input?.conformance ?? {};
  if (check.busy_ms) await task.sleep(check.busy_ms); // silent but for heartbeats; a cancel ends it
  return { root, files: surveyed, byExtension, ...(check.echo !== undefined ? { echo: check.echo } : {}) };
});
