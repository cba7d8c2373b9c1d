/**
 * Pure translation of Claude Code's `claude -p --output-format stream-json --verbose` events into
 * the same neutral events as the cursor-cli template (see ../cursor-cli/translate.mjs):
 *
 *   init    {model, session_id, cwd}
 *   text    {text, delta}
 *   tool    {phase: 'started'|'completed', call_id, name, args, ok?, result?}
 *   status  {message}                         — API retries, assistant-level errors
 *   result  {ok, text, subtype, session_id, duration_ms, meta}
 *
 * `ok` comes from `is_error`, never from `subtype`: auth and quota failures arrive as
 * `"subtype":"success","is_error":true`. Unknown event types and fields are ignored.
 */
import { parseEventLine, shorten, stripAnsi, textOf } from '../_shared/stream-json.mjs';

export { parseEventLine, shorten, stripAnsi, textOf };

/** Claude Code's wording when it has no valid credentials (matched loosely). */
export const AUTH_FAILURE_PATTERN =
  /invalid api key|not logged in|please run \/login|authentication_failed|authentication required|oauth token (?:has )?expired/i;

export function looksLikeAuthFailure(text) {
  return typeof text === 'string' && AUTH_FAILURE_PATTERN.test(text);
}

function toolResultText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return textOf({ content });
  return content === undefined ? '' : JSON.stringify(content);
}

/**
 * Anthropic usage → `meta.token_usage`. `input` counts every token the model read (fresh, cache
 * writes and cache reads: what a budget cares about); the cache split is kept alongside.
 */
export function tokenUsageOf(usage) {
  if (!usage || typeof usage !== 'object') return undefined;
  const fresh = Number(usage.input_tokens) || 0;
  const cacheCreation = Number(usage.cache_creation_input_tokens) || 0;
  const cacheRead = Number(usage.cache_read_input_tokens) || 0;
  const output = Number(usage.output_tokens) || 0;
  return {
    input: fresh + cacheCreation + cacheRead,
    output,
    total: fresh + cacheCreation + cacheRead + output,
    cache_creation: cacheCreation,
    cache_read: cacheRead,
  };
}

/**
 * A stateful translator for one run. `push(event)` returns zero or more neutral events.
 * @param {{partialOutput?: boolean}} [options] set when the CLI ran with `--include-partial-messages`:
 *   text then comes from `stream_event` deltas, and whole `assistant` texts are not repeated.
 */
export function createClaudeTranslator(options = {}) {
  const partialOutput = options.partialOutput === true;
  const open = new Map(); // tool_use id → {name, args}
  let sessionId;
  let model;
  let lastError;
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
        if (event.subtype === 'api_retry') {
          const parts = [`API retry ${event.attempt ?? '?'}/${event.max_retries ?? '?'}`];
          if (event.error_status !== undefined) parts.push(`status ${event.error_status}`);
          if (event.error) parts.push(shorten(event.error, 120));
          return [{ kind: 'status', message: parts.join(', ') }];
        }
        return [];
      case 'assistant': {
        const out = [];
        if (typeof event.error === 'string') {
          lastError = event.error;
          out.push({ kind: 'status', message: `assistant error: ${event.error}` });
        }
        const content = Array.isArray(event.message?.content) ? event.message.content : [];
        for (const part of content) {
          if (part?.type === 'text' && typeof part.text === 'string' && part.text !== '' && !partialOutput) {
            out.push({ kind: 'text', text: part.text, delta: false });
          } else if (part?.type === 'tool_use') {
            const callId = String(part.id ?? '');
            open.set(callId, { name: String(part.name ?? 'tool'), args: part.input });
            out.push({
              kind: 'tool',
              phase: 'started',
              call_id: callId,
              name: String(part.name ?? 'tool'),
              args: shorten(part.input ?? {}, 200),
            });
          }
        }
        return out;
      }
      case 'user': {
        const content = Array.isArray(event.message?.content) ? event.message.content : [];
        const out = [];
        for (const part of content) {
          if (part?.type !== 'tool_result') continue;
          const callId = String(part.tool_use_id ?? '');
          const started = open.get(callId);
          open.delete(callId);
          out.push({
            kind: 'tool',
            phase: 'completed',
            call_id: callId,
            name: started?.name ?? 'tool',
            args: shorten(started?.args ?? {}, 200),
            ok: part.is_error !== true,
            result: shorten(toolResultText(part.content)),
          });
        }
        return out;
      }
      case 'stream_event': {
        const delta = event.event?.delta;
        if (
          partialOutput &&
          event.event?.type === 'content_block_delta' &&
          delta?.type === 'text_delta' &&
          typeof delta.text === 'string'
        ) {
          return [{ kind: 'text', text: delta.text, delta: true }];
        }
        return [];
      }
      case 'result': {
        finished = true;
        const meta = {};
        if (sessionId !== undefined) meta.session_id = sessionId;
        if (model !== undefined) meta.model_used = model;
        for (const key of ['duration_ms', 'duration_api_ms', 'num_turns', 'total_cost_usd']) {
          if (typeof event[key] === 'number') meta[key] = event[key];
        }
        if (event.usage && typeof event.usage === 'object') {
          meta.usage = event.usage;
          meta.token_usage = tokenUsageOf(event.usage);
        }
        if (Array.isArray(event.permission_denials) && event.permission_denials.length > 0) {
          meta.permission_denials = event.permission_denials.map((denial) => denial?.tool_name ?? 'tool');
        }
        const text = typeof event.result === 'string' ? event.result : '';
        return [
          {
            kind: 'result',
            ok: event.is_error !== true,
            text,
            subtype: event.subtype,
            error: lastError,
            session_id: sessionId,
            duration_ms: event.duration_ms,
            meta,
          },
        ];
      }
      default:
        return [];
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
    get finished() {
      return finished;
    },
    get openCalls() {
      return [...open.keys()];
    },
  };
}

/**
 * The command line for one headless run. stream-json needs `--verbose` (without it the CLI exits 1).
 * Writes are denied in print mode unless `allowWrites` (→ `--permission-mode acceptEdits`) or an
 * explicit `permissionMode` is given.
 * @param {{prompt: string, model?: string, allowWrites?: boolean, permissionMode?: string, resume?: string,
 *          maxTurns?: number, partialOutput?: boolean, extraArgs?: string[]}} options
 */
export function buildClaudeArgs(options) {
  const args = ['-p', options.prompt, '--output-format', 'stream-json', '--verbose'];
  if (options.model) args.push('--model', options.model);
  const mode = options.permissionMode ?? (options.allowWrites ? 'acceptEdits' : undefined);
  if (mode) args.push('--permission-mode', mode);
  if (options.resume) args.push('--resume', options.resume);
  if (options.maxTurns) args.push('--max-turns', String(options.maxTurns));
  if (options.partialOutput) args.push('--include-partial-messages');
  return [...args, ...(options.extraArgs ?? [])];
}
