#!/usr/bin/env node
/**
 * Sub-agent that runs Claude Code headless and reports its progress and result:
 *
 *   claude -p --output-format stream-json --verbose [--model <m>] [--permission-mode acceptEdits] --setting-sources user -- <prompt>
 *
 * Only the owner's settings load (`--setting-sources user`): the working directory's own
 * `.claude/settings*.json` would run its hooks and approve its `.mcp.json` servers (README).
 *
 * stdin is ignored (with an open stdin pipe `claude` waits for EOF), except for prompts over 100 KiB,
 * which are written to it and closed. `is_error` decides success, not `subtype`; the last `result`
 * is the answer (a background sub-agent makes two); `total_cost_usd`, the last turn's `usage`, the
 * run's `token_usage`, `num_turns`, `session_id` go to meta. A 401/403 fails at the first retry, not
 * after ten. Claude Code runs in this wrapper's process group (the broker's kill reaches it) and is
 * stopped with SIGTERM and a grace longer than the ~1.5 s it takes to stop its own shells.
 *
 * Input: a prompt string, or
 *   {"prompt": "…", "model": "sonnet", "allow_writes": false, "max_turns": 20, "resume": "<session id>",
 *    "partial_output": false, "idle_timeout_ms": 600000}
 * Bridge mode: when the task was offered tools (`task.tools`), Claude Code runs with the stdio MCP
 * relay as its only MCP server and no built-in tools (bridge.mjs):
 *   … --mcp-config <private dir>/mcp.json --strict-mcp-config --allowedTools mcp__backchannel --tools "" -- <prompt>
 * so each tool call it makes is a call to the task's caller.
 * Environment (the owner's; never input): CLAUDE_BIN (default `claude`), CLAUDE_PERMISSION_MODE (one of
 * default, acceptEdits, plan, bypassPermissions), CLAUDE_EXTRA_ARGS (a JSON array of arguments added to
 * Claude Code's), CLAUDE_MODEL, ANTHROPIC_API_KEY (passed through); the broker's BACKCHANNEL_MAX_TURNS and
 * BACKCHANNEL_MAX_COST_USD (the task's budget) become `--max-turns` and `--max-budget-usd`.
 */
import { runAgent } from 'backchannel-agents/agent-runtime';
import { openBridge, TOOL_CALL_TIMEOUT_MS } from '../_shared/bridge.mjs';
import { promptViaStdin } from '../_shared/cli-process.mjs';
import { AgentFailure, argsFromEnv, argvValueFromInput, refuseOwnerOnlyInput, runHeadless } from '../_shared/run-headless.mjs';
import { buildClaudeArgs, createClaudeTranslator, looksLikeAuthFailure } from './translate.mjs';

/** Tool calls (builds, test runs) can be silent for minutes; beyond this the CLI counts as stuck. */
const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
const PERMISSION_MODES = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];
/** Claude Code needs ≈ 1.5 s after SIGTERM to stop the shells it runs in their own sessions. */
const KILL_GRACE_MS = 2500;
/** A `result` is followed by a later one within this long when a background task just finished. */
const RESULT_SETTLE_MS = 500;
/** Output that no retry can change. */
const FATAL_OUTPUT = [
  {
    pattern: /cannot be used with root\/sudo privileges/,
    message:
      'Claude Code refuses bypassPermissions (--dangerously-skip-permissions) when run as root: ' +
      'set CLAUDE_PERMISSION_MODE=acceptEdits, or run the broker as a normal user',
  },
];

function readOptions(input) {
  const options = typeof input === 'string' ? { prompt: input } : input && typeof input === 'object' ? input : {};
  if (typeof options.prompt !== 'string' || options.prompt.trim() === '') {
    throw new AgentFailure('input needs a "prompt" (a non-empty string), e.g. {"prompt": "Explain src/"}', { retryable: false });
  }
  refuseOwnerOnlyInput(options, { bin: 'CLAUDE_BIN', extra_args: 'CLAUDE_EXTRA_ARGS', permission_mode: 'CLAUDE_PERMISSION_MODE' });
  const text = (value) => (typeof value === 'string' && value !== '' ? value : undefined);
  const permissionMode = text(process.env.CLAUDE_PERMISSION_MODE);
  if (permissionMode !== undefined && !PERMISSION_MODES.includes(permissionMode)) {
    throw new AgentFailure(`CLAUDE_PERMISSION_MODE must be one of ${PERMISSION_MODES.join(', ')}`, { retryable: false });
  }
  return {
    prompt: options.prompt,
    bin: text(process.env.CLAUDE_BIN) ?? 'claude',
    model: argvValueFromInput(options, 'model') ?? text(process.env.CLAUDE_MODEL),
    allowWrites: options.allow_writes === true,
    permissionMode,
    // The task's budget (the broker's BACKCHANNEL_MAX_TURNS / _COST_USD) caps what the input may ask for.
    maxTurns: smallest(
      Number.isInteger(options.max_turns) && options.max_turns > 0 ? options.max_turns : undefined,
      budgetFromEnv('BACKCHANNEL_MAX_TURNS'),
    ),
    maxBudgetUsd: budgetFromEnv('BACKCHANNEL_MAX_COST_USD'),
    resume: argvValueFromInput(options, 'resume'),
    partialOutput: options.partial_output === true,
    extraArgs: argsFromEnv('CLAUDE_EXTRA_ARGS'),
    idleTimeoutMs:
      Number.isFinite(options.idle_timeout_ms) && options.idle_timeout_ms > 0 ? options.idle_timeout_ms : DEFAULT_IDLE_TIMEOUT_MS,
  };
}

/** A positive number from the broker's budget variables, or undefined. */
function budgetFromEnv(name) {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

function smallest(a, b) {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

runAgent(async (task) => {
  const options = readOptions(task.input);
  const bridge = await openBridge(task);
  try {
    return await runHeadless(task, {
      product: 'Claude Code',
      bin: options.bin,
      args: buildClaudeArgs({ ...options, bridge }),
      // A call to the caller's tools may wait on a person; Claude Code's own limit would give up first.
      env: bridge ? { MCP_TOOL_TIMEOUT: String(TOOL_CALL_TIMEOUT_MS) } : undefined,
      waiting: bridge ? () => bridge.relay.inFlight > 0 : undefined,
      stdinText: promptViaStdin(options.prompt) ? options.prompt : undefined,
      ownGroup: false,
      killGraceMs: KILL_GRACE_MS,
      settleMs: RESULT_SETTLE_MS,
      fatalOutput: FATAL_OUTPUT,
      translator: createClaudeTranslator({ partialOutput: options.partialOutput, mcpServer: bridge?.serverName }),
      looksLikeAuthFailure,
      loginHint: 'Claude Code is not logged in: run `claude` once and /login, or give the broker ANTHROPIC_API_KEY',
      installHint: 'Install it (npm install -g @anthropic-ai/claude-code) or set CLAUDE_BIN.',
      idleTimeoutMs: options.idleTimeoutMs,
    });
  } finally {
    await bridge?.close();
  }
});
