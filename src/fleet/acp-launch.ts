/**
 * An ACP job on a worker (docs/acp.md): the agent's command line, admitted by the worker's own
 * allow-list, runs under this installation's ACP adapter — `<adapter> [--task-id=<id>] -- <agent…>` —
 * with the job's settings. The settings come from the queue, so they are read, not trusted: a worker
 * never offers the agent a terminal (only the owner's own `run` does), whatever they say.
 */
import { ARG_TASK_ID } from '../protocol/index.js';
import { defaultAdapterPath } from '../broker/acp/index.js';
import type { Admitted } from './allow-list.js';

/** The adapter's command line and settings for an admitted ACP agent; settings that do not read give the defaults. */
export function acpLaunch(admitted: Admitted, settings: string): { command: string; args: string[]; settings: string } {
  const own = admitted.args.filter((arg) => arg.startsWith(ARG_TASK_ID));
  const agent = admitted.args.filter((arg) => !arg.startsWith(ARG_TASK_ID));
  return {
    command: defaultAdapterPath(),
    args: [...own, '--', admitted.command, ...agent],
    settings: JSON.stringify(withoutTerminal(settings)),
  };
}

function withoutTerminal(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { ...value, terminal: false };
  } catch {
    // Not JSON: the adapter's defaults (every tool kind but read and search asked).
  }
  return { terminal: false };
}
