/**
 * The one inbound pipeline, shared by the socket channel and the stdout fallback reader:
 * parse → validate → task-id check. Delivery (and what a failure means) is the caller's.
 */
import { parseLine, preview, validateAgentMessage, type AgentMessage } from '../../protocol/index.js';

export type Inbound = { ok: true; message: AgentMessage } | { ok: false; kind: 'malformed' | 'rejected'; detail: string };

/** Reads one line of agent output meant for `taskId`; `via` names the channel in the detail of a failure. */
export function readInbound(text: string, taskId: string, via: 'socket' | 'stdout'): Inbound {
  const from = via === 'stdout' ? 'stdout: ' : '';
  const parsed = parseLine(text);
  if (!parsed.ok) return { ok: false, kind: 'malformed', detail: `${from}${parsed.reason}` };
  const checked = validateAgentMessage(parsed.value);
  if (!checked.ok) return { ok: false, kind: 'malformed', detail: `${from}${checked.reason}: ${preview(text)}` };
  const message = checked.message;
  if (message.task_id !== taskId) {
    return { ok: false, kind: 'rejected', detail: `${from}message for task ${preview(message.task_id, 40)} on the channel of ${taskId}` };
  }
  return { ok: true, message };
}
