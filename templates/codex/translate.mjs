/**
 * Pure translation of `codex exec --json` events (one JSON object per line: thread.started,
 * turn.started, item.started/updated/completed, turn.completed, turn.failed, error) into the neutral
 * events the shared runner reports (../_shared/run-headless.mjs):
 *
 *   init    {session_id}                                  — thread.started (its thread_id: `codex exec resume <id>`)
 *   text    {text, delta: false}                          — an agent_message item
 *   tool    {phase, call_id, name, args, ok?, result?}    — command_execution, file_change, mcp_tool_call, web_search items
 *   thinking {text}                                       — a reasoning item's summary (before its status; items after
 *                                                           the first start with a blank line: the pieces are one text)
 *   status  {message}                                     — reasoning, a todo list, an error item (a warning), an `error` event
 *   fatal   {message, auth: true}                         — an `error` event that says the key was refused (401)
 *   result  {ok, text, session_id, meta}                  — turn.completed (ok) or turn.failed (not ok)
 *
 * Mapped against the stream of the real Codex 0.171.0 (test/fixtures/recordings/codex-exec-json*.jsonl):
 * - an `error` event is not the end: Codex prints one per reconnect ("Reconnecting... 2/5 (…)") and
 *   ends a failed turn with `turn.failed`; only a refused key stops the run at once (the retries cannot help);
 * - a command is the shell's whole command line (`/bin/bash -lc 'npm test'`): the step shows the script;
 * - a file change starts and completes (`item.started`, then `item.completed`), with absolute paths;
 * - `turn.completed.usage` is the thread's total so far: a resumed thread's includes the earlier runs'
 *   (`baseline` subtracts them), and `input_tokens` counts the cached ones (`cached_input_tokens`).
 *
 * The format drifts between releases: unknown event and item types are ignored, never fatal.
 */
import { promptViaStdin } from '../_shared/cli-process.mjs';
import { parseEventLine, shorten, shortenArgs } from '../_shared/stream-json.mjs';

export { parseEventLine };

export const AUTH_FAILURE_PATTERN = /not logged in|login required|codex login|OPENAI_API_KEY|401 Unauthorized|invalid api key/i;

export function looksLikeAuthFailure(text) {
  return typeof text === 'string' && AUTH_FAILURE_PATTERN.test(text);
}

/**
 * The script of a command that Codex runs through a shell (`/bin/bash -lc 'npm test'`, `bash -lc ls`, `/bin/bash -lc "…"`
 * with `\"`, `\\`, `\$` and `` \` `` escaped); any other command as it is.
 */
export function commandScript(command) {
  if (typeof command !== 'string') return command;
  const match = /^(?:\/usr)?(?:\/bin\/)?(?:bash|sh|zsh) -lc (?:'([^']*)'|"((?:[^"\\]|\\.)*)"|([^\s'"\\]+))$/s.exec(command);
  if (!match) return command;
  return match[1] ?? match[3] ?? match[2].replace(/\\([\\"$`])/g, '$1');
}

/** A path inside `cwd` as relative to it. */
function relativeTo(cwd, file) {
  return cwd && typeof file === 'string' && file.startsWith(`${cwd}/`) ? file.slice(cwd.length + 1) : file;
}

/** An item as a tool call: its kind as the name, what it works on as the arguments. */
function toolOf(item, cwd) {
  switch (item.type) {
    case 'command_execution':
      return { name: 'command_execution', args: { command: commandScript(item.command) } };
    case 'file_change': {
      const changes = (Array.isArray(item.changes) ? item.changes : []).map((c) => ({ kind: c?.kind, path: relativeTo(cwd, c?.path) }));
      return { name: 'file_change', args: { path: changes[0]?.path, changes: changes.map((c) => `${c.kind} ${c.path}`) } };
    }
    case 'mcp_tool_call':
      return { name: `mcp__${item.server}__${item.tool}`, args: item.arguments ?? {} };
    case 'web_search':
      return { name: 'web_search', args: { query: item.query } };
    default:
      return undefined;
  }
}

/**
 * Codex usage (its field names) less `baseline` (what the thread had used before this run), field by field.
 */
export function usageSince(usage, baseline) {
  if (!usage || typeof usage !== 'object') return undefined;
  if (!baseline || typeof baseline !== 'object') return { ...usage };
  const out = {};
  for (const [key, value] of Object.entries(usage)) {
    out[key] = typeof value === 'number' && typeof baseline[key] === 'number' ? Math.max(0, value - baseline[key]) : value;
  }
  return out;
}

/**
 * Codex usage → `meta.token_usage` (the protocol's `{input, output, total}`). `input_tokens` already
 * counts the cached input, and `output_tokens` the reasoning; the splits are kept alongside.
 */
export function tokenUsageOf(usage) {
  if (!usage || typeof usage !== 'object') return undefined;
  const input = Number(usage.input_tokens) || 0;
  const output = Number(usage.output_tokens) || 0;
  const out = { input, output, total: input + output };
  if (usage.cached_input_tokens !== undefined) out.cache_read = Number(usage.cached_input_tokens) || 0;
  if (usage.cache_write_input_tokens !== undefined) out.cache_creation = Number(usage.cache_write_input_tokens) || 0;
  if (usage.reasoning_output_tokens !== undefined) out.reasoning = Number(usage.reasoning_output_tokens) || 0;
  return out;
}

/**
 * @param {{cwd?: string, baseline?: object}} [options] `cwd`: paths of file changes are shown relative
 *   to it; `baseline`: the thread's usage before this run (a resumed thread's `turn.completed` counts it).
 */
export function createCodexTranslator({ cwd, baseline } = {}) {
  const open = new Map();
  let sessionId;
  let lastText = '';
  let lastError;
  let usage;
  let finished = false;
  let thought = false;

  function push(event) {
    if (finished || !event || typeof event !== 'object') return [];
    switch (event.type) {
      case 'thread.started':
        if (typeof event.thread_id === 'string') sessionId = event.thread_id;
        return [{ kind: 'init', session_id: sessionId }];
      case 'item.started':
      case 'item.updated':
      case 'item.completed': {
        const item = event.item;
        if (!item || typeof item !== 'object') return [];
        if (item.type === 'agent_message') {
          if (event.type !== 'item.completed' || typeof item.text !== 'string') return [];
          lastText = item.text;
          return [{ kind: 'text', text: item.text, delta: false }];
        }
        // An error item is a warning ("Model metadata for `x` not found…"): the turn goes on.
        if (item.type === 'reasoning' || item.type === 'todo_list' || item.type === 'error') {
          if (event.type !== 'item.completed') return [];
          const message =
            item.type === 'todo_list'
              ? `plan: ${(item.items ?? []).map((t) => `${t.completed ? '✓' : '·'} ${t.text}`).join('; ')}`
              : String(item.text ?? item.message ?? '');
          if (!message) return [];
          const status = { kind: 'status', message: shorten(message, 200) };
          if (item.type !== 'reasoning') return [status];
          const thinking = { kind: 'thinking', text: thought ? `\n\n${message}` : message };
          thought = true;
          return [thinking, status];
        }
        const tool = toolOf(item, cwd);
        if (!tool) return [];
        const callId = String(item.id ?? '');
        if (event.type === 'item.started' && !open.has(callId)) {
          open.set(callId, tool);
          return [{ kind: 'tool', phase: 'started', call_id: callId, ...tool, args: shortenArgs(tool.args) }];
        }
        if (event.type !== 'item.completed') return [];
        const started = open.get(callId);
        open.delete(callId);
        const ok = item.status !== 'failed' && (item.exit_code === undefined || item.exit_code === null || item.exit_code === 0);
        const out = [];
        // An item that arrives completed only (no item.started) starts and ends in one event.
        if (!started) out.push({ kind: 'tool', phase: 'started', call_id: callId, ...tool, args: shortenArgs(tool.args) });
        out.push({
          kind: 'tool',
          phase: 'completed',
          call_id: callId,
          ...tool,
          args: shortenArgs(tool.args),
          ok,
          result: item.aggregated_output === undefined ? undefined : shorten(item.aggregated_output, 200),
        });
        return out;
      }
      case 'turn.completed': {
        finished = true;
        if (event.usage && typeof event.usage === 'object') usage = event.usage;
        return [{ kind: 'result', ok: true, text: lastText, session_id: sessionId, meta: metaOf() }];
      }
      case 'error': {
        // One per reconnect ("Reconnecting... 1/5 (…)") and one before `turn.failed`: progress, not the end,
        // unless the key was refused, which no retry mends.
        const message = typeof event.message === 'string' ? event.message : String(event.error?.message ?? 'Codex reported an error');
        lastError = message;
        if (/\b401 Unauthorized\b|invalid api key|incorrect api key|not logged in|login required/i.test(message)) {
          return [{ kind: 'fatal', message: shorten(message.replace(/^Reconnecting\.\.\. \d+\/\d+ \((.*)\)$/s, '$1'), 300), auth: true }];
        }
        return [{ kind: 'status', message: shorten(message, 200) }];
      }
      case 'turn.failed': {
        finished = true;
        const message = String(event.error?.message ?? lastError ?? 'Codex reported an error');
        return [{ kind: 'result', ok: false, text: '', error: message, subtype: event.type, session_id: sessionId, meta: metaOf() }];
      }
      default:
        return [];
    }
  }

  function metaOf() {
    const meta = {};
    if (sessionId !== undefined) meta.session_id = sessionId;
    if (usage) {
      const run = usageSince(usage, baseline);
      meta.usage = run; // this run's, in Codex's names
      if (baseline) meta.thread_usage = usage;
      meta.token_usage = tokenUsageOf(run);
    }
    return meta;
  }

  return {
    push,
    get sessionId() {
      return sessionId;
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
 * The command line for one run: `codex exec --json [--model m] [--sandbox workspace-write]
 * [--skip-git-repo-check] [resume <id>] -- <prompt>` (a long prompt goes through stdin as `-`).
 * Writes are only allowed when the caller allows them (the default sandbox is read-only).
 */
export function buildCodexArgs(options) {
  const args = ['exec', '--json'];
  if (options.model) args.push('--model', options.model);
  // Bridge mode: the caller's tools come through the relay and Codex's own commands may only read.
  args.push('--sandbox', options.allowWrites && !options.bridge ? 'workspace-write' : 'read-only');
  if (options.bridge) {
    // `-c` values are TOML; a JSON string or array of strings is one.
    const server = `mcp_servers.${options.bridge.serverName}`;
    args.push('-c', `${server}.command=${JSON.stringify(options.bridge.relay.command)}`);
    args.push('-c', `${server}.args=${JSON.stringify(options.bridge.relay.args)}`);
    args.push('-c', `${server}.tool_timeout_sec=${Math.round(options.bridge.toolTimeoutMs / 1000)}`);
    // Required: Codex waits for the relay before its first model request (else the first request
    // goes out without the tools), and fails at start if the relay cannot start. Approved: `exec` has
    // no one to ask ("MCP tool call requires approval, but approval policy is never"); the caller
    // who answers the call is the one who approves it.
    args.push('-c', `${server}.required=true`, '-c', `${server}.default_tools_approval_mode="approve"`);
  }
  if (options.skipGitRepoCheck) args.push('--skip-git-repo-check');
  args.push(...(options.extraArgs ?? []));
  if (options.resume) args.push('resume', options.resume);
  return promptViaStdin(options.prompt) ? [...args, '-'] : [...args, '--', options.prompt];
}
