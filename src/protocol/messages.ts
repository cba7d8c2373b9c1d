/**
 * Backchannel wire protocol v1: the typed messages both the broker and the agent runtime import.
 * docs/protocol.md is the prose version of this file; keep them in step.
 */

export const PROTOCOL_VERSION = 1;

/** Statuses an agent may send. `partial` and `heartbeat` are progress; the other three are final. */
export const FINAL_STATUSES = ['success', 'error', 'cancelled'] as const;
export const PROGRESS_STATUSES = ['partial', 'heartbeat'] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];
export type ProgressStatus = (typeof PROGRESS_STATUSES)[number];
export type PayloadStatus = FinalStatus | ProgressStatus;

export interface TokenUsage {
  input?: number;
  output?: number;
  total?: number;
  [key: string]: unknown;
}

/** Operational metadata. Agents fill what they know; the broker adds its own fields on receipt. */
export interface PayloadMeta {
  /** ISO 8601 time the payload was produced. */
  timestamp?: string;
  duration_ms?: number;
  model_used?: string;
  token_usage?: TokenUsage;
  [key: string]: unknown;
}

/** The agent → broker result/progress message: one JSON object per line. */
export interface Payload<D = unknown> {
  task_id: string;
  status: PayloadStatus;
  data?: D;
  meta?: PayloadMeta;
  /** Proves the sender knows the task secret; required on the first message of a socket connection. */
  token?: string;
  /** On an `error` payload: `false` makes the failure final (no retry). */
  retryable?: boolean;
  /**
   * Final payloads only: big values kept out of the JSON line (docs/protocol.md §4.1). On the wire,
   * announcements whose raw bytes follow the line (socket) or carry `base64` (stdout, spool); in a
   * delivered payload, each with its `content`.
   */
  attachments?: Attachment[];
}

/** How an attachment's bytes are meant: `utf8` text (delivered as a string) or `binary` (a Buffer). */
export type AttachmentEncoding = 'binary' | 'utf8';

/**
 * One attachment. The agent announces `name`, `bytes` and `encoding`; on the socket exactly `bytes`
 * raw bytes follow the payload's newline (attachments in their order), elsewhere `base64` holds them.
 * The broker delivers it with `content` (and without `base64`); snapshots and history keep only the header.
 */
export interface Attachment {
  name: string;
  bytes: number;
  /** @default 'binary' */
  encoding?: AttachmentEncoding;
  /** The bytes, base64-encoded, inline (stdout fallback and spool file; optional on the socket). */
  base64?: string;
  /** Set by the receiver: the bytes as a string (`utf8`) or a Buffer (`binary`). Never sent. */
  content?: string | Uint8Array;
}

export interface FinalPayload<D = unknown> extends Payload<D> {
  status: FinalStatus;
}

/** Agent → broker: opens a connection (optional; a payload carrying `token` does the same). */
export interface HelloMessage {
  type: 'hello';
  task_id: string;
  token: string;
  /** Free-form: SDK name and version, language. */
  agent?: string;
}

/** Agent → broker: ask the person a question and wait for an `answer`. */
export interface AskMessage {
  type: 'ask';
  task_id: string;
  /** Agent-chosen id, echoed in the answer. */
  ask_id: string;
  question: string;
  choices?: string[];
  /** The question is an approval: what an ACP agent asks permission for (docs/acp.md). */
  approval?: ApprovalContext;
  token?: string;
}

/**
 * What an approval question concerns: the tool call an ACP agent asks permission for, and the
 * agent's own options (their names are the question's `choices`). Written by the ACP adapter
 * (src/acp), shown by every door that answers questions (docs/acp.md).
 */
export interface ApprovalContext {
  tool_call_id: string;
  /** ACP's tool kind: read, edit, delete, move, search, execute, think, fetch, other. */
  kind: string;
  title: string;
  /** The paths the tool call touches. */
  locations?: string[];
  /** The command line, for an `execute` tool call. */
  command?: string;
  /** The agent's options, in its order: the answer names one (its `name`, or its number). */
  options: ApprovalOption[];
  /** The agent asked about a tool call it never announced. */
  unannounced?: boolean;
}

export interface ApprovalOption {
  option_id: string;
  name: string;
  /** allow_once, allow_always, reject_once, reject_always. */
  kind: string;
}

/** An approval's options, at most (ACP agents offer two to four). */
export const MAX_APPROVAL_OPTIONS = 16;

/**
 * A tool the task's caller hosts, offered to the agent in its `welcome` (docs/protocol.md §6.1): its
 * name, what it does, and the JSON Schema of its arguments.
 */
export interface OfferedTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** Longest `call_id` of a tool call (it travels back to the caller, who names the call by it). */
export const MAX_CALL_ID = 200;

/** Agent → broker: call a tool the task's caller hosts, and wait for its `tool_result`. */
export interface ToolCallMessage {
  type: 'tool_call';
  task_id: string;
  /** Agent-chosen id, unique among the task's pending calls; echoed in the result. */
  call_id: string;
  /** One of the offered tools' names. */
  name: string;
  /** The arguments (a JSON object, as the tool's `input_schema` describes). */
  arguments: Record<string, unknown>;
  token?: string;
}

export type AgentMessage = Payload | HelloMessage | AskMessage | ToolCallMessage;

/** Broker → agent messages. */
export interface WelcomeMessage {
  type: 'welcome';
  task_id: string;
  attempt: number;
  protocol: number;
  /** How often the broker expects a message; the SDK heartbeats at a third of it. 0 = no watchdog. */
  heartbeat_timeout_ms: number;
  /** The tools the task's caller hosts (§6.1); absent when it offered none. */
  tools?: OfferedTool[];
}
export interface InputMessage {
  type: 'input';
  task_id: string;
  data: unknown;
}
export interface CancelMessage {
  type: 'cancel';
  task_id: string;
  reason: string;
}
export interface AckMessage {
  type: 'ack';
  task_id: string;
  status: FinalStatus;
}
export interface AnswerMessage {
  type: 'answer';
  task_id: string;
  ask_id: string;
  /** The answer, or absent with `error` when nobody answered in time. */
  answer?: string;
  error?: string;
  /** The door the answer came through (`cli`, `panel`, `mcp`, `notification`, `control`): an approval records it. */
  via?: string;
}
/**
 * Broker → agent: the caller's answer to a `tool_call`: `content` (any JSON, usually a string), or
 * `error` instead when the tool failed, was not offered, or the task is ending.
 */
export interface ToolResultMessage {
  type: 'tool_result';
  task_id: string;
  call_id: string;
  content?: unknown;
  error?: string;
}
export interface RejectMessage {
  type: 'reject';
  task_id?: string;
  reason: string;
}
export type BrokerMessage = WelcomeMessage | InputMessage | CancelMessage | AckMessage | AnswerMessage | ToolResultMessage | RejectMessage;

// Comparisons, not FINAL_STATUSES.includes(): these run for every line of a chatty agent.
export function isFinalStatus(status: unknown): status is FinalStatus {
  return status === 'success' || status === 'error' || status === 'cancelled';
}

export function isPayloadStatus(status: unknown): status is PayloadStatus {
  return status === 'partial' || status === 'heartbeat' || isFinalStatus(status);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Result of checking one decoded line: either a typed message or a human-readable reason. */
export type Validation<T> = { ok: true; message: T } | { ok: false; reason: string };

/** Longest attachment name (it becomes a file name in `--save-attachments` and the panel download). */
export const MAX_ATTACHMENT_NAME = 200;

/** An attachment name that is safe as a bare file name: no path separators, no dot-only names, no control characters. */
export function isAttachmentName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= MAX_ATTACHMENT_NAME &&
    name !== '.' &&
    name !== '..' &&
    !/[\u0000-\u001f\u007f/\\]/.test(name)
  );
}

/** True when any attachment of the payload sends its bytes raw after the line (none inline). */
export function announcesRawBytes(value: unknown): boolean {
  const list = isPlainObject(value) ? value.attachments : undefined;
  return Array.isArray(list) && list.some((a) => !isPlainObject(a) || a.base64 === undefined);
}

/** Checks `attachments` of a payload; a reason when it is wrong. */
function attachmentProblem(value: Record<string, unknown>): string | undefined {
  const list = value.attachments;
  if (!Array.isArray(list)) return '"attachments" must be an array';
  if (!isFinalStatus(value.status)) return 'only final payloads (success, error, cancelled) may carry attachments';
  const names = new Set<string>();
  for (const a of list) {
    if (!isPlainObject(a)) return 'an attachment must be an object';
    if (!isAttachmentName(a.name)) return `attachment name ${JSON.stringify(a.name)?.slice(0, 40)} is not a plain file name`;
    if (names.has(a.name)) return `attachment name ${JSON.stringify(a.name)} is used twice`;
    names.add(a.name);
    if (typeof a.bytes !== 'number' || !Number.isSafeInteger(a.bytes) || a.bytes < 0) return 'attachment "bytes" must be a whole number';
    if (a.encoding !== undefined && a.encoding !== 'binary' && a.encoding !== 'utf8') return 'attachment "encoding" must be binary or utf8';
    if (a.base64 !== undefined && typeof a.base64 !== 'string') return 'attachment "base64" must be a string';
    if ('content' in a) return 'attachment "content" is set by the receiver, never sent';
  }
  return undefined;
}

/**
 * Checks the shape of an agent → broker message. Cheap by design (no schema library): it runs on
 * every line of a chatty agent. It does not check task ids or tokens; that is the channel's job.
 */
export function validateAgentMessage(value: unknown): Validation<AgentMessage> {
  const reason = agentMessageProblem(value);
  return reason === undefined ? { ok: true, message: value as AgentMessage } : { ok: false, reason };
}

/** What is wrong with an agent → broker message, or undefined when it is valid (validateAgentMessage without the wrapper). */
export function agentMessageProblem(value: unknown): string | undefined {
  if (!isPlainObject(value)) {
    const kind = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
    return `expected a JSON object, got ${kind}`;
  }
  if (typeof value.task_id !== 'string' || value.task_id === '') return 'missing "task_id" (a non-empty string)';
  if (value.token !== undefined && typeof value.token !== 'string') return '"token" must be a string';
  if ('type' in value && value.type !== undefined) {
    if (value.type === 'hello') return typeof value.token !== 'string' ? 'hello without "token"' : undefined;
    if (value.type === 'ask') {
      if (typeof value.ask_id !== 'string' || value.ask_id === '') return 'ask without "ask_id"';
      if (typeof value.question !== 'string') return 'ask without "question"';
      if (value.choices !== undefined && !(Array.isArray(value.choices) && value.choices.every((c) => typeof c === 'string'))) {
        return 'ask "choices" must be an array of strings';
      }
      return value.approval === undefined ? undefined : approvalProblem(value.approval);
    }
    if (value.type === 'tool_call') return toolCallProblem(value);
    return `unknown message type ${JSON.stringify(String(value.type)).slice(0, 40)}`;
  }
  if (!isPayloadStatus(value.status)) {
    return `unknown "status" ${JSON.stringify(value.status)?.slice(0, 40) ?? 'undefined'} (expected partial, heartbeat, success, error or cancelled)`;
  }
  if (value.meta !== undefined && !isPlainObject(value.meta)) return '"meta" must be an object';
  if (value.retryable !== undefined && typeof value.retryable !== 'boolean') return '"retryable" must be a boolean';
  if (value.attachments !== undefined) return attachmentProblem(value);
  return undefined;
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** What is wrong with an ask's `approval`, or undefined. */
function approvalProblem(value: unknown): string | undefined {
  if (!isPlainObject(value)) return 'ask "approval" must be an object';
  for (const key of ['tool_call_id', 'kind', 'title'] as const) {
    if (!isString(value[key])) return `ask "approval.${key}" must be a string`;
  }
  if (value.locations !== undefined && !(Array.isArray(value.locations) && value.locations.every(isString))) {
    return 'ask "approval.locations" must be an array of strings';
  }
  if (value.command !== undefined && !isString(value.command)) return 'ask "approval.command" must be a string';
  if (value.unannounced !== undefined && typeof value.unannounced !== 'boolean') return 'ask "approval.unannounced" must be a boolean';
  const options = value.options;
  if (!Array.isArray(options) || options.length === 0 || options.length > MAX_APPROVAL_OPTIONS) {
    return `ask "approval.options" must be an array of 1 to ${MAX_APPROVAL_OPTIONS} options`;
  }
  const bad = options.some(
    (option) => !isPlainObject(option) || !isString(option.option_id) || !isString(option.name) || !isString(option.kind),
  );
  return bad ? 'ask "approval.options" must each have string "option_id", "name" and "kind"' : undefined;
}

/** What is wrong with a `tool_call`, or undefined. */
function toolCallProblem(value: Record<string, unknown>): string | undefined {
  if (typeof value.call_id !== 'string' || value.call_id === '') return 'tool_call without "call_id"';
  if (value.call_id.length > MAX_CALL_ID) return `tool_call "call_id" is longer than ${MAX_CALL_ID} characters`;
  if (typeof value.name !== 'string' || value.name === '') return 'tool_call without "name"';
  if (!isPlainObject(value.arguments)) return 'tool_call "arguments" must be an object';
  return undefined;
}

export function isPayload(message: AgentMessage): message is Payload {
  return !('type' in message) || (message as { type?: unknown }).type === undefined;
}

/** Checks a broker → agent message (used by the agent runtime). */
export function validateBrokerMessage(value: unknown): Validation<BrokerMessage> {
  if (!isPlainObject(value)) return { ok: false, reason: 'expected a JSON object' };
  switch (value.type) {
    case 'welcome':
    case 'input':
    case 'cancel':
    case 'ack':
    case 'answer':
    case 'reject':
      return { ok: true, message: value as unknown as BrokerMessage };
    case 'tool_result':
      if (typeof value.call_id !== 'string') return { ok: false, reason: 'tool_result without "call_id"' };
      if (value.error !== undefined && typeof value.error !== 'string')
        return { ok: false, reason: 'tool_result "error" must be a string' };
      return { ok: true, message: value as unknown as BrokerMessage };
    default:
      return { ok: false, reason: `unknown broker message type ${JSON.stringify(value.type)}` };
  }
}

/** `data.progress` of a partial payload, clamped to 0–100, or undefined when absent/not a number. */
export function progressOf(payload: Payload): number | undefined {
  const data = payload.data;
  if (!isPlainObject(data)) return undefined;
  const p = data.progress;
  if (typeof p !== 'number' || !Number.isFinite(p)) return undefined;
  return Math.min(100, Math.max(0, p));
}

/**
 * One clock function for both sides, so timestamps compare (design: ISO 8601, never epoch numbers).
 * The same text as `toISOString()` (for years 1000–9999), built by hand: the first `toISOString()` call in
 * a process costs ≈ 0.2 ms, which every agent would pay on its first payload.
 */
export function isoNow(): string {
  return isoString(new Date());
}

/** `d.toISOString()`, without its first-call cost for years 1000–9999 (see isoNow). */
export function isoString(d: Date): string {
  const year = d.getUTCFullYear();
  // A clock far off (or an invalid date) gets toISOString's own format, or its RangeError.
  if (!(year >= 1000 && year <= 9999)) return d.toISOString();
  const ms = d.getUTCMilliseconds();
  return (
    `${year}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}` +
    `T${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`
  );
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}
