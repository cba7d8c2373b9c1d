/**
 * The ACP adapter program: a Backchannel sub-agent that runs an ACP agent as its child and speaks ACP
 * to it through the official SDK, so the broker's guards, questions, budgets and history apply to any
 * ACP agent (docs/acp.md). Run as
 *
 *   node dist/acp/main.js -- <agent command> [agent args…]
 *
 * with the task hand-off as for any agent (CURSOR_TASK_ID, CURSOR_IPC_PATH, --task-id=) and its
 * settings in BACKCHANNEL_ACP (settings.ts). The agent command comes from argv only, never the input.
 */
import { agentEnv } from './agent-env.js';
import { agentCommandLine, startAgent } from './agent-process.js';
import type { AcpSettings } from './settings.js';

/** The settings, or why they are refused (read once; gone from the environment after). */
async function settingsOrError(): Promise<AcpSettings | Error> {
  const { takeSettings } = await import('./settings.js');
  try {
    return takeSettings(process.env);
  } catch (error) {
    return error as Error;
  }
}

async function main(): Promise<number> {
  const [command, ...args] = agentCommandLine(process.argv);
  // The agent boots first, while this process connects to its task and loads zod and the ACP SDK (the
  // bulk of its own start): only this file's few imports come before it.
  const agent = command === undefined ? undefined : startAgent(command, args, process.cwd(), agentEnv());
  const [settings, task, { AcpRun }] = await Promise.all([
    settingsOrError(),
    import('../agent-runtime/index.js').then(({ connectTask }) => connectTask({ agent: 'backchannel-acp/1' })),
    import('./run.js'),
  ]).catch(async (error: unknown) => {
    await agent?.stop();
    throw error;
  });
  if (settings instanceof Error || agent === undefined) {
    await agent?.stop();
    const why = settings instanceof Error ? settings : new Error('no ACP agent command: run as `main.js -- <agent command> [args…]`');
    await task.fail(why, { retryable: false });
    await task.close();
    return 2;
  }
  // Bridge mode (./bridge.ts) when the task was offered its caller's tools: loaded only then.
  const closeBridge = task.tools.length > 0 ? await (await import('./bridge.js')).openBridge(task, settings) : undefined;
  const outcome = await new AcpRun(task, settings, agent, command!, process.cwd()).run();
  await closeBridge?.();
  await task.close();
  return outcome.status === 'success' ? 0 : outcome.status === 'cancelled' ? 130 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[backchannel-acp] ${(error as Error).message}\n`);
    process.exit(1);
  },
);
