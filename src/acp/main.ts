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
import { connectTask } from '../agent-runtime/index.js';
import { agentCommandLine } from './agent-process.js';
import { AcpRun } from './run.js';
import { takeSettings, type AcpSettings } from './settings.js';

async function main(): Promise<number> {
  // Settings first: they are gone from the environment before anything is started.
  let settings: AcpSettings | Error;
  try {
    settings = takeSettings(process.env);
  } catch (error) {
    settings = error as Error;
  }
  const task = await connectTask({ agent: 'backchannel-acp/1' });
  const [command, ...args] = agentCommandLine(process.argv);
  if (settings instanceof Error || command === undefined) {
    const why = settings instanceof Error ? settings : new Error('no ACP agent command: run as `main.js -- <agent command> [args…]`');
    await task.fail(why, { retryable: false });
    await task.close();
    return 2;
  }
  const outcome = await new AcpRun(task, settings, command, args, process.cwd()).run();
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
