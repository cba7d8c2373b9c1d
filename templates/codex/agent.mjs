#!/usr/bin/env node
/**
 * Sub-agent that runs the Codex CLI headless and reports its progress and result:
 *
 *   codex exec --json [--model <m>] --sandbox read-only|workspace-write [resume <session id>] -- <prompt>
 *
 * Input: a prompt string, or
 *   {"prompt": "…", "model": "…", "allow_writes": false, "resume": "<session id>",
 *    "skip_git_repo_check": false, "idle_timeout_ms": 600000}
 * Environment (the owner's; never input): CODEX_BIN (default `codex`), CODEX_EXTRA_ARGS (a JSON array
 * of arguments added to Codex's), CODEX_MODEL, OPENAI_API_KEY / CODEX_HOME (passed through).
 *
 * Progress: thread.started → {phase:'init', session_id}; agent messages → {text}; commands and file
 * changes → {message: "running npm test" | "editing src/x.ts", step, tool, phase, args, ok};
 * reconnects and warnings → {status}.
 * Final: turn.completed (the last agent message; this run's usage in meta), or turn.failed; a refused
 * key (401) fails at once, without retries.
 * Bridge mode: when the task was offered tools (`task.tools`), Codex runs with the stdio MCP relay
 * as an MCP server and a read-only sandbox (bridge.mjs), whatever `allow_writes` says:
 *   codex exec --json --sandbox read-only -c mcp_servers.backchannel.command=… -c mcp_servers.backchannel.args=[…] …
 * A follow-up in the same worktree resumes the thread (`resume`: meta.session_id of the last run).
 */
import { runAgent } from 'backchannel-agents/agent-runtime';
import { openBridge, TOOL_CALL_TIMEOUT_MS } from '../_shared/bridge.mjs';
import { promptViaStdin } from '../_shared/cli-process.mjs';
import { AgentFailure, argsFromEnv, argvValueFromInput, refuseOwnerOnlyInput, runHeadless } from '../_shared/run-headless.mjs';
import { threadUsage } from './sessions.mjs';
import { buildCodexArgs, createCodexTranslator, looksLikeAuthFailure } from './translate.mjs';

const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;

function readOptions(input) {
  const options = typeof input === 'string' ? { prompt: input } : input && typeof input === 'object' ? input : {};
  if (typeof options.prompt !== 'string' || options.prompt.trim() === '') {
    throw new AgentFailure('input needs a "prompt" (a non-empty string), e.g. {"prompt": "Explain src/"}', { retryable: false });
  }
  refuseOwnerOnlyInput(options, { bin: 'CODEX_BIN', extra_args: 'CODEX_EXTRA_ARGS' });
  const text = (value) => (typeof value === 'string' && value !== '' ? value : undefined);
  return {
    prompt: options.prompt,
    bin: text(process.env.CODEX_BIN) ?? 'codex',
    model: argvValueFromInput(options, 'model') ?? text(process.env.CODEX_MODEL),
    allowWrites: options.allow_writes === true,
    resume: argvValueFromInput(options, 'resume'),
    skipGitRepoCheck: options.skip_git_repo_check === true,
    extraArgs: argsFromEnv('CODEX_EXTRA_ARGS'),
    idleTimeoutMs:
      Number.isFinite(options.idle_timeout_ms) && options.idle_timeout_ms > 0 ? options.idle_timeout_ms : DEFAULT_IDLE_TIMEOUT_MS,
  };
}

runAgent(async (task) => {
  const options = readOptions(task.input);
  const bridge = await openBridge(task);
  try {
    return await runHeadless(task, {
      product: 'the Codex CLI',
      bin: options.bin,
      args: buildCodexArgs({ ...options, bridge: bridge && { ...bridge, toolTimeoutMs: TOOL_CALL_TIMEOUT_MS } }),
      waiting: bridge ? () => bridge.relay.inFlight > 0 : undefined,
      stdinText: promptViaStdin(options.prompt) ? options.prompt : undefined,
      // A resumed thread's usage counts the earlier runs: the session file says how much that was.
      translator: createCodexTranslator({ cwd: process.cwd(), baseline: options.resume ? threadUsage(options.resume) : undefined }),
      looksLikeAuthFailure,
      loginHint: 'the Codex CLI is not logged in: run `codex login`, or give the broker OPENAI_API_KEY',
      installHint: 'Install it (npm install -g @openai/codex) or set CODEX_BIN.',
      idleTimeoutMs: options.idleTimeoutMs,
    });
  } finally {
    await bridge?.close();
  }
});
