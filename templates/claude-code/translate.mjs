/**
 * Pure translation of Claude Code's `claude -p --output-format stream-json --verbose` events into
 * the same neutral events as the cursor-cli template (see ../cursor-cli/translate.mjs):
 *
 *   init     {model, session_id, cwd}
 *   text     {text, delta}                     — the main answer only
 *   thinking {text}                            — a piece of the main agent's thinking (always a delta:
 *                                                the whole block, or with partial output its deltas)
 *   subagent {text, parent}                    — a sub-agent's text (`parent_tool_use_id` set): progress
 *   tool     {phase: 'started'|'completed', call_id, name, args, ok?, result?}
 *   status   {message}                         — API retries, background tasks, assistant-level errors
 *   fatal    {message, auth}                   — a 401/403 API retry: failing now beats ten retries
 *   result   {ok, text, subtype, session_id, duration_ms, meta, final, index}
 *
 * `ok` comes from `is_error`, never from `subtype`: auth and quota failures arrive as
 * `"subtype":"success","is_error":true`. With a background sub-agent, Claude Code prints several
 * `result` lines (`result_index` 0 is the interim "I launched a background agent…"): the last one is
 * the answer, and `final` is false while background tasks are still pending. Token usage is the
 * run's (`modelUsage`, every turn and sub-agent), not the last turn's (`usage`); `model_used` is an
 * API model id (a `modelUsage` key) rather than a display name such as `claude-opus-4-8[1m]`.
 * Unknown event types and fields are ignored.
 */
import { promptViaStdin } from '../_shared/cli-process.mjs';
import { parseEventLine, shorten, shortenArgs, stripAnsi, textOf } from '../_shared/stream-json.mjs';

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

/** `modelUsage` ({model: {inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens}}) summed. */
export function runUsageOf(modelUsage) {
  if (!modelUsage || typeof modelUsage !== 'object') return undefined;
  const models = Object.values(modelUsage).filter((m) => m && typeof m === 'object');
  if (models.length === 0) return undefined;
  const sum = (key) => models.reduce((total, m) => total + (Number(m[key]) || 0), 0);
  const fresh = sum('inputTokens');
  const cacheCreation = sum('cacheCreationInputTokens');
  const cacheRead = sum('cacheReadInputTokens');
  const output = sum('outputTokens');
  const input = fresh + cacheCreation + cacheRead;
  return { input, output, total: input + output, cache_creation: cacheCreation, cache_read: cacheRead };
}

/** A display name's decorations removed: `claude-opus-4-8[1m]` → `claude-opus-4-8`. */
export function modelId(name) {
  return typeof name === 'string' ? name.replace(/\[[^\]]*\]$/, '').trim() : undefined;
}

/**
 * A stateful translator for one run. `push(event)` returns zero or more neutral events.
 * @param {{partialOutput?: boolean, mcpServer?: string}} [options] `partialOutput`: set when the CLI ran
 *   with `--include-partial-messages`: text then comes from `stream_event` deltas, and whole `assistant`
 *   texts are not repeated. `mcpServer`: bridge mode's relay, which must start (else a `fatal`).
 */
export function createClaudeTranslator(options = {}) {
  const partialOutput = options.partialOutput === true;
  const open = new Map(); // tool_use id → {name, args}
  let sessionId;
  let model;
  let lastError;
  let finished = false;
  let initialized = false;
  /** Background tasks Claude Code reported as running (`background_tasks_changed`). */
  let pendingTasks = 0;

  /**
   * Bridge mode: Claude Code goes on without an MCP server that failed to start (its tools are then
   * "No such tool available"), so the run stops at once, saying so (recorded with 2.1.332).
   */
  function mcpServerFailed(event) {
    if (!options.mcpServer || !Array.isArray(event.mcp_servers)) return [];
    const server = event.mcp_servers.find((s) => s && s.name === options.mcpServer);
    if (server && server.status !== 'failed') return [];
    const why = server ? 'failed to start' : 'is missing';
    return [
      {
        kind: 'fatal',
        message: `the MCP relay for the task's tools ${why} in Claude Code (mcp_servers: ${JSON.stringify(event.mcp_servers)})`,
      },
    ];
  }

  function system(event) {
    switch (event.subtype) {
      case 'init':
        if (typeof event.model === 'string') model = modelId(event.model);
        if (initialized) return []; // a second init follows a background task: same run
        initialized = true;
        return [{ kind: 'init', model, session_id: sessionId, cwd: event.cwd }, ...mcpServerFailed(event)];
      case 'api_retry': {
        const parts = [`API retry ${event.attempt ?? '?'}/${event.max_retries ?? '?'}`];
        if (event.error_status !== undefined && event.error_status !== null) parts.push(`status ${event.error_status}`);
        if (event.error) parts.push(shorten(event.error, 120));
        if (event.error_status === 401 || event.error_status === 403 || event.error === 'authentication_failed') {
          return [{ kind: 'fatal', auth: true, message: `the API refused the credentials (${parts.slice(1).join(', ')})` }];
        }
        return [{ kind: 'status', message: parts.join(', ') }];
      }
      case 'background_tasks_changed':
        pendingTasks = Array.isArray(event.tasks) ? event.tasks.length : 0;
        return [{ kind: 'status', message: `background tasks running: ${pendingTasks}` }];
      case 'task_started':
        return [{ kind: 'status', message: `background task started: ${shorten(event.description ?? event.task_id ?? '', 120)}` }];
      case 'task_notification':
        return [
          {
            kind: 'status',
            message: `background task ${event.status ?? 'updated'}: ${shorten(event.summary ?? event.task_id ?? '', 120)}`,
          },
        ];
      default:
        return [];
    }
  }

  function push(event) {
    if (!event || typeof event !== 'object') return [];
    if (typeof event.session_id === 'string') sessionId = event.session_id;
    const parent = typeof event.parent_tool_use_id === 'string' ? event.parent_tool_use_id : undefined;
    switch (event.type) {
      case 'system':
        return system(event);
      case 'assistant': {
        if (parent !== undefined) {
          const text = textOf(event.message);
          return text === '' ? [] : [{ kind: 'subagent', text: shorten(text, 500), parent }];
        }
        const out = [];
        if (typeof event.error === 'string') {
          lastError = event.error;
          out.push({ kind: 'status', message: `assistant error: ${event.error}` });
        }
        const content = Array.isArray(event.message?.content) ? event.message.content : [];
        for (const part of content) {
          if (part?.type === 'text' && typeof part.text === 'string' && part.text !== '' && !partialOutput) {
            out.push({ kind: 'text', text: part.text, delta: false });
          } else if (part?.type === 'thinking' && typeof part.thinking === 'string' && part.thinking !== '' && !partialOutput) {
            out.push({ kind: 'thinking', text: part.thinking });
          } else if (part?.type === 'tool_use') {
            const callId = String(part.id ?? '');
            open.set(callId, { name: String(part.name ?? 'tool'), args: part.input });
            out.push({
              kind: 'tool',
              phase: 'started',
              call_id: callId,
              name: String(part.name ?? 'tool'),
              args: shortenArgs(part.input ?? {}),
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
            args: shortenArgs(started?.args ?? {}),
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
          parent === undefined &&
          event.event?.type === 'content_block_delta' &&
          delta?.type === 'text_delta' &&
          typeof delta.text === 'string'
        ) {
          return [{ kind: 'text', text: delta.text, delta: true }];
        }
        if (
          partialOutput &&
          parent === undefined &&
          event.event?.type === 'content_block_delta' &&
          delta?.type === 'thinking_delta' &&
          typeof delta.thinking === 'string' &&
          delta.thinking !== ''
        ) {
          return [{ kind: 'thinking', text: delta.thinking }];
        }
        return [];
      }
      case 'result': {
        finished = true;
        const meta = {};
        if (sessionId !== undefined) meta.session_id = sessionId;
        const apiModels = event.modelUsage && typeof event.modelUsage === 'object' ? Object.keys(event.modelUsage) : [];
        const usedModel = apiModels[0] ?? model;
        if (usedModel !== undefined) meta.model_used = usedModel;
        for (const key of ['duration_ms', 'duration_api_ms', 'num_turns', 'total_cost_usd']) {
          if (typeof event[key] === 'number') meta[key] = event[key];
        }
        if (event.usage && typeof event.usage === 'object') {
          meta.usage = event.usage; // the last turn's
          meta.token_usage = tokenUsageOf(event.usage);
        }
        const runUsage = runUsageOf(event.modelUsage);
        if (runUsage) meta.token_usage = runUsage;
        if (typeof event.terminal_reason === 'string') meta.terminal_reason = event.terminal_reason;
        if (typeof event.api_error_status === 'number') meta.api_error_status = event.api_error_status;
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
            index: typeof event.result_index === 'number' ? event.result_index : undefined,
            final: pendingTasks === 0,
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
  const args = ['-p', '--output-format', 'stream-json', '--verbose'];
  if (options.model) args.push('--model', options.model);
  const mode = options.permissionMode ?? (options.allowWrites ? 'acceptEdits' : undefined);
  if (mode) args.push('--permission-mode', mode);
  if (options.resume) args.push('--resume', options.resume);
  if (options.maxTurns) args.push('--max-turns', String(options.maxTurns));
  if (options.maxBudgetUsd) args.push('--max-budget-usd', String(options.maxBudgetUsd));
  if (options.partialOutput) args.push('--include-partial-messages');
  // The working directory is the caller's choice, often a repository nobody vetted: its own
  // `.claude/settings.json` and `.claude/settings.local.json` would run their hooks (commands) and
  // approve its `.mcp.json` servers (issue 36: both happened with 2.1.332). Only the owner's settings
  // (~/.claude) load. The owner's CLAUDE_EXTRA_ARGS come after.
  args.push('--setting-sources', 'user');
  args.push(...(options.extraArgs ?? []));
  if (options.bridge) {
    // Bridge mode: the relay is the only MCP server, its tools need no prompt, and no built-in tool
    // (Bash, Read, Edit, Write…) exists. Each of these options takes a list: the next one ends it.
    args.push('--mcp-config', options.bridge.mcpConfigFile, '--strict-mcp-config');
    args.push('--allowedTools', `mcp__${options.bridge.serverName}`, '--tools', '');
  }
  // `--` ends the options: a prompt such as "--help" or "--api-key=…" stays a prompt. A long prompt
  // goes through stdin instead (`claude -p` reads it there when no prompt argument is given).
  return promptViaStdin(options.prompt) ? args : [...args, '--', options.prompt];
}
