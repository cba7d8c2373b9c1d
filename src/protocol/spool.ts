/**
 * The spool: where an agent whose broker vanished leaves its final payload, and the one place that
 * names, writes, reads and checks such a file. The SDK writes it; the attempt and the broker's
 * recovery read it. Node-only (file IO), so it is not re-exported from the protocol's browser-safe index.
 */
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rawAttachments, resolveAttachments } from './attachments.js';
import { isFinalStatus, validateAgentMessage, type FinalPayload } from './messages.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from './framing.js';

export const SPOOL_SUFFIX = '.json';

/** The spool file name of a task (a bare name: a task id can never reach outside the spool directory). */
export function spoolFileName(taskId: string): string {
  const base = taskId.replace(/^.*[\\/]/, '');
  return `${base}${SPOOL_SUFFIX}`;
}

/** The task id a spool file name stands for, or undefined for any other file. */
export function taskIdOfSpoolFile(name: string): string | undefined {
  return name.endsWith(SPOOL_SUFFIX) && name.length > SPOOL_SUFFIX.length ? name.slice(0, -SPOOL_SUFFIX.length) : undefined;
}

/** A spool file's content: one JSON payload and a newline. */
export function encodeSpooled(payload: unknown): string {
  return JSON.stringify(payload) + '\n';
}

export type SpoolRead = { ok: true; payload: FinalPayload } | { ok: false; reason: string };

/** Parses and checks a spool file's text: a valid final payload, for `taskId` when one is given. */
export function parseSpooled(text: string, taskId?: string): SpoolRead {
  let value: unknown;
  if (nestedDeeperThan(text)) return { ok: false, reason: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  const checked = validateAgentMessage(value);
  if (!checked.ok) return { ok: false, reason: checked.reason };
  if (!('status' in checked.message) || !isFinalStatus(checked.message.status)) return { ok: false, reason: 'not a final payload' };
  if (taskId !== undefined && checked.message.task_id !== taskId) return { ok: false, reason: `for task ${checked.message.task_id}` };
  const payload = checked.message as FinalPayload;
  if (rawAttachments(payload).length > 0) return { ok: false, reason: 'spooled attachments must carry their bytes in "base64"' };
  const resolved = resolveAttachments(payload);
  if (!resolved.ok) return { ok: false, reason: resolved.reason };
  return { ok: true, payload: resolved.payload as FinalPayload };
}

/** The spool file of a task in `dir`. */
export function spoolPath(dir: string, taskId: string): string {
  return join(dir, spoolFileName(taskId));
}

/**
 * Where a spool file is written before it is renamed into place: a name the readers ignore (not
 * `*.json`), one per process, in the same directory (a rename there is atomic).
 */
export function spoolTempName(taskId: string, pid = process.pid): string {
  return `.${spoolFileName(taskId)}.${pid}.tmp`;
}

/**
 * Writes a task's final payload to the spool (owner-only), whole or not at all: to a temporary name,
 * then renamed. Written in place, a broker reading the spool meanwhile (a restarted hub adopting
 * spool files while a big result is still being written) read half a file, found it unreadable
 * and removed it, and the agent's result was lost. Throws when it cannot.
 */
export function writeSpooled(dir: string, payload: { task_id: string }): void {
  const temp = join(dir, spoolTempName(payload.task_id));
  try {
    writeFileSync(temp, encodeSpooled(payload), { mode: 0o600 });
    renameSync(temp, spoolPath(dir, payload.task_id));
  } catch (error) {
    removeSpoolFile(temp); // a disk that filled up halfway leaves no temporary file behind
    throw error;
  }
}

/**
 * writeSpooled for the agent runtime, which imports node:fs and node:path only here: importing
 * them at the top cost every agent's start ~0.8 ms of CPU (node:fs's ESM facade loads its streams),
 * and the spool is the rare path (a broker that did not acknowledge the result).
 */
export async function writeSpooledLazily(dir: string, payload: { task_id: string }): Promise<void> {
  const [fs, path] = await Promise.all([import('node:fs'), import('node:path')]);
  // Whole or not at all, as writeSpooled: a temporary name, then renamed into place.
  const temp = path.join(dir, spoolTempName(payload.task_id));
  try {
    fs.writeFileSync(temp, encodeSpooled(payload), { mode: 0o600 });
    fs.renameSync(temp, path.join(dir, spoolFileName(payload.task_id)));
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
}

/** Reads and checks a spool file by path. */
export function readSpoolFile(file: string, taskId?: string): SpoolRead {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  return parseSpooled(text, taskId);
}

/** The valid final payload spooled for `taskId` in `dir`, if there is one. */
export function readSpooled(dir: string, taskId: string): FinalPayload | undefined {
  const read = readSpoolFile(spoolPath(dir, taskId), taskId);
  return read.ok ? read.payload : undefined;
}

/** Removes a spool file, ignoring "already gone". */
export function removeSpoolFile(file: string): void {
  // Usually there is none: asking first is far cheaper than the ENOENT error unlinkSync would throw (once per task).
  if (!existsSync(file)) return;
  try {
    unlinkSync(file);
  } catch {
    // None, or gone already: the usual case.
  }
}
