/**
 * The ACP session a follow-up continues: read from the parent task's final payload, which the adapter
 * fills (`meta.acp.session_id`, `data.session_id`, and a transcript when it kept one), live or from
 * history — so a follow-up continues the session after the hub restarted too.
 */
import type { FinalPayload } from '../../protocol/index.js';

const MAX_SESSION_ID = 1024;

type Session = { id: string; transcript?: unknown[] };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The parent's session, or undefined when its result names none. */
export function sessionOfResult(final: FinalPayload | null | undefined): Session | undefined {
  if (!final) return undefined;
  const meta = isRecord(final.meta?.acp) ? final.meta.acp : {};
  const data = isRecord(final.data) ? final.data : {};
  const id = [meta.session_id, data.session_id].find((value): value is string => typeof value === 'string' && value !== '');
  if (id === undefined || id.length > MAX_SESSION_ID) return undefined;
  const transcript = [data.transcript, meta.transcript].find(Array.isArray);
  return transcript ? { id, transcript } : { id };
}
