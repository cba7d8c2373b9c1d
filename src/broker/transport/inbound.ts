/**
 * The one inbound pipeline, shared by the socket channel and the stdout fallback reader:
 * parse → take the token out → validate → task-id check → inline attachments. Delivery (and what a
 * failure means) is the caller's.
 *
 * The token is removed from the parsed object before anything else sees it, so it never reaches
 * updates, history or the panel; previews of refused lines are made from the token-free value.
 */
import {
  agentMessageProblem,
  announcesRawBytes,
  isPayload,
  MAX_CALL_ID,
  parseLine,
  preview,
  rawAttachments,
  resolveAttachments,
  type AgentMessage,
  type ParsedLine,
  type Payload,
} from '../../protocol/index.js';
import type { RejectCause } from '../../model/task.js';

/**
 * `fatal`: the refused line announced raw attachment bytes, which cannot be told from lines once the
 * line itself is not trusted, so the connection cannot go on. `protocol`: the line breaks the
 * protocol (nested deeper than MAX_JSON_DEPTH, or a malformed `tool_call` of this task whose
 * `call_id` cannot be answered): the task fails with a protocol error. `callId`: a malformed
 * `tool_call` of this task with a usable `call_id`: answer it with an error result (Y6n), so the agent
 * never waits on a call nobody saw.
 */
export type Inbound =
  | { ok: true; message: AgentMessage; token: string | undefined }
  | {
      ok: false;
      kind: 'malformed' | 'rejected';
      detail: string;
      cause?: RejectCause;
      fatal?: boolean;
      protocol?: true;
      callId?: string;
    };

/**
 * Reads one line of agent output meant for `taskId`; `via` names the channel in the detail of a failure.
 * A valid `partial` or `heartbeat` takes the fast path (progressLine); every other line, and every
 * line the fast path is not sure of, takes readInboundChecked. Both give the same answer for every
 * line (test/broker/transport/inbound-fast-path.test.ts).
 */
export function readInbound(text: string, taskId: string, via: 'socket' | 'stdout'): Inbound {
  const parsed = parseLine(text);
  const fast = parsed.ok ? progressLine(parsed.value, taskId) : undefined;
  if (fast !== undefined) return { ok: true, message: fast, token: undefined };
  return checkParsed(parsed, taskId, via);
}

/**
 * The frequent lines of a chatty agent: a `partial` or `heartbeat` of this task with no `type`, no
 * `token` and no `attachments`, its `meta` an object or absent, its `retryable` a boolean or absent.
 * Such a line is valid, and nothing else in readInboundChecked applies to it; this checks just that,
 * field by field, and returns undefined for anything else (which then gets every check). A parsed
 * JSON value never holds `undefined`, so `!== undefined` is "the key is there".
 */
function progressLine(value: unknown, taskId: string): Payload | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (record.task_id !== taskId || taskId === '') return undefined;
  const status = record.status;
  if (status !== 'partial' && status !== 'heartbeat') return undefined;
  if (record.type !== undefined || record.token !== undefined || record.attachments !== undefined) return undefined;
  const meta = record.meta;
  if (meta !== undefined && (typeof meta !== 'object' || meta === null || Array.isArray(meta))) return undefined;
  const retryable = record.retryable;
  if (retryable !== undefined && typeof retryable !== 'boolean') return undefined;
  return value as Payload;
}

/** readInbound with every check and no fast path: the reference the fast path is tested against. */
export function readInboundChecked(text: string, taskId: string, via: 'socket' | 'stdout'): Inbound {
  return checkParsed(parseLine(text), taskId, via);
}

function checkParsed(parsed: ParsedLine, taskId: string, via: 'socket' | 'stdout'): Inbound {
  const from = via === 'stdout' ? 'stdout: ' : '';
  // Too deep to walk safely (see MAX_JSON_DEPTH): the task fails with a protocol error.
  if (!parsed.ok) return { ok: false, kind: 'malformed', detail: `${from}${parsed.reason}`, ...(parsed.tooDeep ? { protocol: true } : {}) };
  const fatal = via === 'socket' && announcesRawBytes(parsed.value);
  const token = takeToken(parsed.value);
  // Validated with the token put back (its type is checked too), then handed on without it.
  const value = token === undefined ? parsed.value : { ...(parsed.value as object), token };
  const problem = agentMessageProblem(value);
  if (problem !== undefined) {
    const detail = `${from}${problem}: ${redactedPreview(parsed.value, token)}`;
    const call = malformedCall(value, taskId);
    if (call === undefined) return { ok: false, kind: 'malformed', detail, fatal };
    return { ok: false, kind: 'malformed', detail, fatal, ...(call.callId === undefined ? { protocol: true } : { callId: call.callId }) };
  }
  const message = value as AgentMessage;
  if (token !== undefined) delete (message as { token?: unknown }).token;
  if (message.task_id !== taskId) {
    return {
      ok: false,
      kind: 'rejected',
      detail: `${from}message for task ${preview(message.task_id, 40)} on the channel of ${taskId}`,
      cause: 'task-id',
      fatal,
    };
  }
  const given = typeof token === 'string' ? token : undefined;
  if (!isPayload(message) || !message.attachments) return { ok: true, message, token: given };
  // Raw bytes follow the line on the socket only; the channel reads them and resolves the payload then.
  if (rawAttachments(message).length > 0) {
    if (via === 'socket') return { ok: true, message, token: given };
    return { ok: false, kind: 'malformed', detail: `${from}attachments on stdout must carry their bytes in "base64"` };
  }
  const resolved = resolveAttachments(message);
  if (!resolved.ok) return { ok: false, kind: 'malformed', detail: `${from}${resolved.reason}` };
  return { ok: true, message: resolved.payload, token: given };
}

/**
 * A `tool_call` of this task that failed validation: its `call_id` when it can be answered (a
 * non-empty string of at most MAX_CALL_ID characters), `{}` when it cannot; undefined for any other line.
 */
function malformedCall(value: unknown, taskId: string): { callId?: string } | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as { type?: unknown; task_id?: unknown; call_id?: unknown };
  if (record.type !== 'tool_call' || record.task_id !== taskId) return undefined;
  const id = record.call_id;
  return typeof id === 'string' && id !== '' && id.length <= MAX_CALL_ID ? { callId: id } : {};
}

/** Removes `token` from a parsed object and returns it (whatever its type, for validation to judge). */
function takeToken(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !('token' in value)) return undefined;
  const record = value as { token?: unknown };
  const token = record.token;
  delete record.token;
  return token;
}

/** A refused line as logs show it: re-encoded from the parsed value, the token (if any) replaced. */
function redactedPreview(value: unknown, token: unknown): string {
  const shown = token === undefined ? value : { ...(value as object), token: '[redacted]' };
  return preview(JSON.stringify(shown) ?? String(shown));
}

/** A received line as the debug trace shows it: the token redacted on the parsed value, then the first 100 characters. */
export function traceable(text: string, token: string): string {
  const parsed = parseLine(text);
  if (parsed.ok) {
    const found = takeToken(parsed.value);
    return redactedPreview(parsed.value, found);
  }
  return redactToken(preview(text), token);
}

/**
 * Pieces of the token this long or longer are redacted wherever they stand. A preview cut at 100
 * characters, or the few characters of source JSON.parse quotes in its message, can hold part of the
 * token: replacing only the whole token left 22–40 of its 64 characters in the log.
 */
const MIN_TOKEN_PIECE = 8;

/** `text` (a short one: a preview, a problem's detail) with every run of MIN_TOKEN_PIECE or more characters of `token` replaced. */
export function redactToken(text: string, token: string): string {
  if (token === '') return text;
  if (token.length < MIN_TOKEN_PIECE) return text.split(token).join('[redacted]');
  let shown = '';
  let at = 0;
  while (at < text.length) {
    let piece = 0;
    for (let length = Math.min(token.length, text.length - at); length >= MIN_TOKEN_PIECE && piece === 0; length--) {
      if (token.includes(text.slice(at, at + length))) piece = length;
    }
    shown += piece > 0 ? '[redacted]' : text[at];
    at += piece > 0 ? piece : 1;
  }
  return shown;
}
