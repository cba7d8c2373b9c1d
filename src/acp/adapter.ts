/**
 * The adapter past its first step (./main.ts starts the agent, then loads this in one import): read
 * the settings, connect to the task, open bridge mode when the task was offered tools, and run the
 * agent to one final payload. A build bundles this module with everything it needs (zod, the ACP
 * SDK, the agent runtime) into one file, dist/acp/adapter.js (scripts/build-acp.mjs), so the
 * adapter's start loads one file instead of ~150 while the agent boots (docs/performance.md).
 */
import { connectTask } from '../agent-runtime/index.js';
import type { AgentProcess } from './agent-process.js';
import { AcpRun } from './run.js';
import { takeSettings, type AcpSettings } from './settings.js';

/** The settings, or why they are refused (read once; gone from the environment after). */
function settingsOrError(): AcpSettings | Error {
  try {
    return takeSettings(process.env);
  } catch (error) {
    return error as Error;
  }
}

/** Runs the task with `agent` (undefined: no agent command was given); resolves to the exit code. */
export async function runAdapter(agent: AgentProcess | undefined, command: string | undefined): Promise<number> {
  const settings = settingsOrError();
  const task = await connectTask({ agent: 'backchannel-acp/1' }).catch(async (error: unknown) => {
    await agent?.stop();
    throw error;
  });
  if (settings instanceof Error || agent === undefined || command === undefined) {
    await agent?.stop();
    const why = settings instanceof Error ? settings : new Error('no ACP agent command: run as `main.js -- <agent command> [args…]`');
    await task.fail(why, { retryable: false });
    await task.close();
    return 2;
  }
  // Bridge mode (./bridge.ts) when the task was offered its caller's tools: loaded only then.
  const closeBridge = task.tools.length > 0 ? await (await import('./bridge.js')).openBridge(task, settings) : undefined;
  const outcome = await new AcpRun(task, settings, agent, command, process.cwd()).run();
  await closeBridge?.();
  await task.close();
  return outcome.status === 'success' ? 0 : outcome.status === 'cancelled' ? 130 : 1;
}
