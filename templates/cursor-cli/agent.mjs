#!/usr/bin/env node
/**
 * Sub-agent that runs the Cursor CLI headless and reports its progress and result:
 *
 *   agent -p --output-format stream-json --trust --workspace <cwd> [--model <m>] [--force] -- <prompt>
 *
 * Prompts over 100 KiB are written to the CLI's stdin instead of argv (E2BIG).
 *
 * Input: a prompt string, or
 *   {"prompt": "…", "model": "…", "allow_writes": false, "resume": "<session id>", "idle_timeout_ms": 600000}
 * Environment (the owner's; never input): CURSOR_AGENT_BIN (default: `agent`, else `cursor-agent`, from
 * PATH), CURSOR_AGENT_EXTRA_ARGS (a JSON array of arguments added to the CLI's), CURSOR_AGENT_MODEL,
 * CURSOR_API_KEY (passed through).
 *
 * Bridge mode: when the task was offered tools (`task.tools`), the workspace's `.cursor/mcp.json`
 * names the stdio MCP relay and `.cursor/cli.json` denies the CLI's own Shell/Read/Write/WebFetch
 * (both put back as they were afterwards), and the CLI runs with `--approve-mcps` (never `--force`).
 *
 * Progress: system/init → {phase:'init', model, session_id}; assistant text → {text};
 * tool calls → {step, tool, phase, args, ok, result}. Final: the `result` event, `is_error` decides.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { runAgent } from 'backchannel-agents/agent-runtime';
import { openBridge } from '../_shared/bridge.mjs';
import { promptViaStdin } from '../_shared/cli-process.mjs';
import { AgentFailure, argsFromEnv, argvValueFromInput, refuseOwnerOnlyInput, runHeadless } from '../_shared/run-headless.mjs';
import { buildCursorArgs, createCursorTranslator, looksLikeAuthFailure } from './translate.mjs';

/** Tool calls (builds, test runs) can be silent for minutes; beyond this the CLI counts as stuck. */
const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;

/** The CLI installs as `agent`, older releases as `cursor-agent`: the first one on PATH. */
function defaultBin() {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of ['agent', 'cursor-agent']) {
    for (const dir of dirs) {
      try {
        accessSync(path.join(dir, name), constants.X_OK);
        return name;
      } catch {
        /* not here */
      }
    }
  }
  return 'agent';
}

function readOptions(input) {
  const options = typeof input === 'string' ? { prompt: input } : input && typeof input === 'object' ? input : {};
  if (typeof options.prompt !== 'string' || options.prompt.trim() === '') {
    throw new AgentFailure('input needs a "prompt" (a non-empty string), e.g. {"prompt": "Explain src/"}', { retryable: false });
  }
  refuseOwnerOnlyInput(options, { bin: 'CURSOR_AGENT_BIN', extra_args: 'CURSOR_AGENT_EXTRA_ARGS' });
  const text = (value) => (typeof value === 'string' && value !== '' ? value : undefined);
  return {
    prompt: options.prompt,
    bin: text(process.env.CURSOR_AGENT_BIN) ?? defaultBin(),
    model: argvValueFromInput(options, 'model') ?? text(process.env.CURSOR_AGENT_MODEL),
    allowWrites: options.allow_writes === true,
    resume: argvValueFromInput(options, 'resume'),
    extraArgs: argsFromEnv('CURSOR_AGENT_EXTRA_ARGS'),
    idleTimeoutMs:
      Number.isFinite(options.idle_timeout_ms) && options.idle_timeout_ms > 0 ? options.idle_timeout_ms : DEFAULT_IDLE_TIMEOUT_MS,
  };
}

/**
 * The Cursor CLI reads MCP servers and permissions from the workspace (`.cursor/mcp.json`,
 * `.cursor/cli.json`): for the run, the relay is its MCP server and its own tools are denied.
 */
function configureWorkspace(bridge, workspace) {
  const dir = path.join(workspace, '.cursor');
  bridge.writeWorkspaceFile(path.join(dir, 'mcp.json'), JSON.stringify(bridge.relay.mcpConfig, null, 2));
  const permissions = { allow: [`Mcp(${bridge.serverName}:*)`], deny: ['Shell(*)', 'Read(**)', 'Write(**)', 'WebFetch(*)'] };
  bridge.writeWorkspaceFile(path.join(dir, 'cli.json'), JSON.stringify({ permissions }, null, 2));
}

runAgent(async (task) => {
  const options = readOptions(task.input);
  const workspace = process.cwd();
  const bridge = await openBridge(task);
  try {
    if (bridge) configureWorkspace(bridge, workspace);
    return await runHeadless(task, {
      product: 'the Cursor CLI',
      bin: options.bin,
      args: buildCursorArgs({ ...options, workspace, bridge }),
      waiting: bridge ? () => bridge.relay.inFlight > 0 : undefined,
      stdinText: promptViaStdin(options.prompt) ? options.prompt : undefined,
      translator: createCursorTranslator(),
      looksLikeAuthFailure,
      loginHint: 'the Cursor CLI is not logged in: run `agent login`, or give the broker CURSOR_API_KEY',
      installHint: 'Install it (curl https://cursor.com/install -fsS | bash) or set CURSOR_AGENT_BIN.',
      idleTimeoutMs: options.idleTimeoutMs,
    });
  } finally {
    await bridge?.close();
  }
});
