/**
 * A turn's failures as the statuses clients of every API understand: a route whose CLI is missing
 * (503 with the install hint), a task's failure (403, 504, 503, 500), and a bridged answer without
 * the call `tool_choice` required (502).
 */
import { findExecutable } from './cursor-cli.js';
import type { GatewayConfig, ModelRoute } from './config.js';
import { HttpError } from './http.js';
import type { TaskFailure } from './request-task/index.js';
import type { RequiredCall } from './request.js';
import { NO_RETRY } from './turn-dedupe.js';

/** Why a route cannot run on this machine (its CLI is missing, with the install hint), or undefined. */
export function unavailableRoute(config: GatewayConfig, route: ModelRoute): string | undefined {
  if (route.kind === 'cursor-cli' && !findExecutable(config.cursorCliPath))
    return (
      `The Cursor CLI ("${config.cursorCliPath}") is not installed: install it with ` +
      '`curl https://cursor.com/install -fsS | bash` (then `agent login` or CURSOR_API_KEY), or set `cursor_cli_path`.'
    );
  // The agent runs the model's CLAUDE_BIN when the model's env sets one (templates/claude-code).
  if (route.kind === 'claude-code' && !findExecutable(route.env.CLAUDE_BIN || process.env.CLAUDE_BIN || 'claude'))
    return 'Claude Code (`claude`) is not installed: `npm install -g @anthropic-ai/claude-code`, or set CLAUDE_BIN.';
  return undefined;
}

/**
 * A task failure as a status the clients of every API understand. Only `unavailable` (the gateway
 * is shutting down, the hub went away) may go better on a retry; the agent's own failure or
 * deadline would only repeat, spending again. A refusal is a 403 that names where the model must be
 * allowed: on a hub, the hub's config file (which it reads again when it changes), not this gateway's.
 */
export function httpErrorFor(failure: TaskFailure, model: string, onHub: boolean): HttpError {
  switch (failure.kind) {
    case 'refused': {
      const where = onHub
        ? ' A gateway on a hub runs what the hub allows: the `command` models of the `gateway:` section of the ' +
          "hub's config file (which it reads again when it changes), its presets and its `run_policy:`. Add the model " +
          "there, or run this gateway with --local to run its models in the gateway's own broker."
        : '';
      return new HttpError(403, `The model \`${model}\` may not run: ${failure.message}.${where}`, 'permission', 'refused', null, NO_RETRY);
    }
    case 'timeout':
      return new HttpError(504, failure.message, 'timeout', 'timeout', null, NO_RETRY);
    case 'unavailable':
      return new HttpError(503, failure.message, 'unavailable', 'unavailable');
    case 'internal':
      return new HttpError(500, failure.message, 'api', 'internal_error', null, NO_RETRY);
    case 'agent':
      return new HttpError(500, failure.message, 'api', `agent_${failure.reason}`, null, NO_RETRY);
  }
}

/**
 * A bridged answer without the call the request's `tool_choice` required: the API promises a call,
 * so text alone is no answer to give. A 502 like an answer that is not the JSON asked for.
 */
export function missingCall(required: RequiredCall): HttpError {
  const which = required.name === undefined ? 'a tool call' : `a call to \`${required.name}\``;
  return new HttpError(
    502,
    `The request's \`tool_choice\` requires ${which}, but the sub-agent answered without one.`,
    'api',
    'tool_call_missing',
    null,
    NO_RETRY,
  );
}
