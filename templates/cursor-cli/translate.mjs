/**
 * Pure translation of the Cursor CLI's `--output-format stream-json` events into neutral events.
 * No I/O, no SDK: the cursor-cli template maps them to payloads, the OpenAI gateway to SSE chunks.
 *
 * Neutral events (`kind`):
 *   init    {model, session_id, cwd}                      — the run started
 *   text    {text, delta}                                 — assistant text (delta: part of a streamed segment)
 *   tool    {phase: 'started'|'completed', call_id, name, args, ok?, result?}
 *   status  {message}                                     — reconnecting, retrying, … (informational)
 *   result  {ok, text, session_id, duration_ms, meta}     — the end of the run; `ok` is `!is_error`
 *
 * The format drifts between releases: unknown event types and fields are ignored, never fatal.
 */

import { promptViaStdin } from '../_shared/cli-process.mjs';
import { parseEventLine, shorten, shortenArgs, stripAnsi, textOf } from '../_shared/stream-json.mjs';

export { parseEventLine, shorten, stripAnsi, textOf };

/** Messages the CLI prints when it is not logged in (matched loosely: wording changes). */
export const AUTH_FAILURE_PATTERN = /not authenticated|not logged in|authentication required|agent login|CURSOR_API_KEY/i;

export function looksLikeAuthFailure(text) {
  return typeof text === 'string' && AUTH_FAILURE_PATTERN.test(text);
}

/**
 * `tool_call: {readToolCall: {args, result}}` → `{name: 'read', args, result}`;
 * `tool_call: {function: {name, arguments}}` → `{name, args}`.
 */
export function describeToolCall(toolCall) {
  if (!toolCall || typeof toolCall !== 'object') return { name: 'tool', args: undefined, result: undefined };
  if (toolCall.function && typeof toolCall.function === 'object') {
    let args = toolCall.function.arguments;
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        /* keep the string */
      }
    }
    return { name: String(toolCall.function.name ?? 'function'), args, result: toolCall.function.result ?? toolCall.result };
  }
  const key = Object.keys(toolCall).find((name) => toolCall[name] && typeof toolCall[name] === 'object');
  if (key === undefined) return { name: 'tool', args: undefined, result: undefined };
  const body = toolCall[key];
  return { name: key.replace(/ToolCall$/, '') || key, args: body.args, result: body.result };
}

/** `result: {success: {...}}` is a success; `error`, `failure`, `rejected`, … are not. */
function toolOutcome(result) {
  if (result === undefined || result === null) return { ok: true, result: undefined };
  if (typeof result !== 'object') return { ok: true, result: shorten(result) };
  if ('success' in result) {
    const success = result.success;
    // File contents can be large: keep the facts, not the text.
    if (success && typeof success === 'object' && typeof success.content === 'string') {
      const { content, ...rest } = success;
      return { ok: true, result: shorten({ ...rest, content: shorten(content, 120) }) };
    }
    // A shell call "succeeds" at running the command; its exit code says whether the command did.
    const exitCode = success && typeof success === 'object' ? success.exitCode : undefined;
    return { ok: exitCode === undefined || exitCode === 0, result: shorten(success) };
  }
  const keys = Object.keys(result);
  const kind = keys.find((key) => /error|fail|reject|denied|abort|timeout/i.test(key)) ?? keys[0];
  const detail = kind === undefined ? result : result[kind];
  const message = typeof detail === 'string' ? detail : (detail?.message ?? detail?.error ?? detail);
  return { ok: false, result: shorten(kind ? `${kind}: ${typeof message === 'string' ? message : JSON.stringify(message)}` : message) };
}

/**
 * A stateful translator for one run. `push(event)` returns zero or more neutral events.
 * @param {{partialOutput?: boolean}} [options] set when the CLI ran with `--stream-partial-output`
 */
export function createCursorTranslator(options = {}) {
  const partialOutput = options.partialOutput === true;
  const open = new Map(); // call_id → {name, args}
  let sessionId;
  let model;
  let finished = false;

  function push(event) {
    if (finished || !event || typeof event !== 'object') return [];
    if (typeof event.session_id === 'string') sessionId = event.session_id;
    switch (event.type) {
      case 'system':
        if (event.subtype === 'init') {
          if (typeof event.model === 'string') model = event.model;
          return [{ kind: 'init', model, session_id: sessionId, cwd: event.cwd }];
        }
        return [];
      case 'assistant': {
        const text = textOf(event.message);
        if (text === '') return [];
        if (partialOutput) {
          // New text carries timestamp_ms without model_call_id; the other two forms are duplicate flushes.
          if (event.timestamp_ms !== undefined && event.model_call_id === undefined) return [{ kind: 'text', text, delta: true }];
          return [];
        }
        return [{ kind: 'text', text, delta: false }];
      }
      case 'tool_call': {
        const callId = String(event.call_id ?? '');
        const described = describeToolCall(event.tool_call);
        if (event.subtype === 'started') {
          open.set(callId, { name: described.name, args: described.args });
          return [{ kind: 'tool', phase: 'started', call_id: callId, name: described.name, args: shortenArgs(described.args ?? {}) }];
        }
        if (event.subtype === 'completed') {
          const started = open.get(callId);
          open.delete(callId);
          const outcome = toolOutcome(described.result);
          return [
            {
              kind: 'tool',
              phase: 'completed',
              call_id: callId,
              name: started?.name ?? described.name,
              args: shortenArgs(started?.args ?? described.args ?? {}),
              ok: outcome.ok,
              result: outcome.result,
            },
          ];
        }
        return [];
      }
      case 'connection':
      case 'retry':
        return [{ kind: 'status', message: [event.type, event.subtype, event.attempt].filter((v) => v !== undefined).join(' ') }];
      case 'result': {
        finished = true;
        const ok = event.is_error !== true;
        const meta = {};
        if (sessionId !== undefined) meta.session_id = sessionId;
        if (typeof event.duration_ms === 'number') meta.duration_ms = event.duration_ms;
        if (typeof event.duration_api_ms === 'number') meta.duration_api_ms = event.duration_api_ms;
        if (typeof event.request_id === 'string') meta.request_id = event.request_id;
        if (model !== undefined) meta.model_used = model;
        if (event.usage && typeof event.usage === 'object') meta.usage = event.usage;
        const text = typeof event.result === 'string' ? event.result : '';
        return [{ kind: 'result', ok, text, subtype: event.subtype, session_id: sessionId, duration_ms: event.duration_ms, meta }];
      }
      default:
        return []; // user echoes, unknown types
    }
  }

  return {
    push,
    get sessionId() {
      return sessionId;
    },
    get model() {
      return model;
    },
    /** True once the `result` event was seen: the run is over whether or not the process exits. */
    get finished() {
      return finished;
    },
    /** Tool calls started but never completed (the run ended in between). */
    get openCalls() {
      return [...open.keys()];
    },
  };
}

/**
 * The command line for one headless run. `--trust` skips the workspace-trust prompt (which hangs
 * or silently does nothing without a TTY); `--force` allows writes and commands without approval,
 * so it is only passed when the caller allows writes.
 * @param {{prompt: string, model?: string, allowWrites?: boolean, resume?: string, workspace?: string,
 *          partialOutput?: boolean, extraArgs?: string[]}} options
 */
export function buildCursorArgs(options) {
  const args = ['-p', '--output-format', 'stream-json', '--trust'];
  if (options.workspace) args.push('--workspace', options.workspace);
  if (options.model) args.push('--model', options.model);
  if (options.allowWrites && !options.bridge) args.push('--force');
  if (options.resume) args.push('--resume', options.resume);
  if (options.partialOutput) args.push('--stream-partial-output');
  // Bridge mode: the relay is in the workspace's .cursor/mcp.json; approve it without a prompt.
  if (options.bridge) args.push('--approve-mcps');
  args.push(...(options.extraArgs ?? []));
  // `--` ends the options: a prompt such as "--force" stays a prompt. A long prompt goes through
  // stdin instead (print mode reads the prompt there when no prompt argument is given).
  return promptViaStdin(options.prompt) ? args : [...args, '--', options.prompt];
}
