/**
 * Pure translation of `codex exec --json` events (one JSON object per line: thread.started,
 * turn.started, item.started/updated/completed, turn.completed, turn.failed, error) into the neutral
 * events the shared runner reports (../_shared/run-headless.mjs):
 *
 *   init    {session_id}                                  — thread.started (its thread_id: `codex exec resume <id>`)
 *   text    {text, delta: false}                          — an agent_message item
 *   tool    {phase, call_id, name, args, ok?, result?}    — command_execution, file_change, mcp_tool_call, web_search items
 *   status  {message}                                     — reasoning, a todo list, a non-fatal error item
 *   result  {ok, text, session_id, meta}                  — turn.completed (ok) or turn.failed / error (not ok)
 *
 * The format drifts between releases: unknown event and item types are ignored, never fatal.
 */
import { promptViaStdin } from '../_shared/cli-process.mjs';
import { parseEventLine, shorten } from '../_shared/stream-json.mjs';

export { parseEventLine };

export const AUTH_FAILURE_PATTERN = /not logged in|login required|codex login|OPENAI_API_KEY|401 Unauthorized|invalid api key/i;

export function looksLikeAuthFailure(text) {
  return typeof text === 'string' && AUTH_FAILURE_PATTERN.test(text);
}

/** An item as a tool call: its kind as the name, what it works on as the arguments. */
function toolOf(item) {
  switch (item.type) {
    case 'command_execution':
      return { name: 'command_execution', args: { command: item.command } };
    case 'file_change': {
      const changes = Array.isArray(item.changes) ? item.changes : [];
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

export function createCodexTranslator() {
  const open = new Map();
  let sessionId;
  let lastText = '';
  let usage;
  let finished = false;

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
        if (item.type === 'reasoning' || item.type === 'todo_list' || item.type === 'error') {
          if (event.type !== 'item.completed') return [];
          const message =
            item.type === 'todo_list'
              ? `plan: ${(item.items ?? []).map((t) => `${t.completed ? '✓' : '·'} ${t.text}`).join('; ')}`
              : String(item.text ?? item.message ?? '');
          return message ? [{ kind: 'status', message: shorten(message, 200) }] : [];
        }
        const tool = toolOf(item);
        if (!tool) return [];
        const callId = String(item.id ?? '');
        if (event.type === 'item.started' && !open.has(callId)) {
          open.set(callId, tool);
          return [{ kind: 'tool', phase: 'started', call_id: callId, ...tool, args: shorten(tool.args, 200) }];
        }
        if (event.type !== 'item.completed') return [];
        const started = open.get(callId);
        open.delete(callId);
        const ok = item.status !== 'failed' && (item.exit_code === undefined || item.exit_code === null || item.exit_code === 0);
        const out = [];
        // A file change arrives completed only: it starts and ends in one event.
        if (!started) out.push({ kind: 'tool', phase: 'started', call_id: callId, ...tool, args: shorten(tool.args, 200) });
        out.push({
          kind: 'tool',
          phase: 'completed',
          call_id: callId,
          ...tool,
          args: shorten(tool.args, 200),
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
      case 'turn.failed':
      case 'error': {
        finished = true;
        const message = String(event.error?.message ?? event.message ?? 'Codex reported an error');
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
      meta.usage = usage;
      meta.token_usage = {
        input_tokens: usage.input_tokens ?? 0,
        output_tokens: usage.output_tokens ?? 0,
        ...(usage.cached_input_tokens !== undefined ? { cache_read_input_tokens: usage.cached_input_tokens } : {}),
      };
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
  args.push('--sandbox', options.allowWrites ? 'workspace-write' : 'read-only');
  if (options.skipGitRepoCheck) args.push('--skip-git-repo-check');
  args.push(...(options.extraArgs ?? []));
  if (options.resume) args.push('resume', options.resume);
  return promptViaStdin(options.prompt) ? [...args, '-'] : [...args, '--', options.prompt];
}
