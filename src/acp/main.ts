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

async function main(): Promise<number> {
  const [command, ...args] = agentCommandLine(process.argv);
  // The agent boots first, while this process loads the rest of the adapter (./adapter.ts: zod, the
  // ACP SDK, the agent runtime; one file in a build) and connects to its task: only this file's few
  // imports come before it.
  const agent = command === undefined ? undefined : startAgent(command, args, process.cwd(), agentEnv());
  const { runAdapter } = await import('./adapter.js').catch(async (error: unknown) => {
    await agent?.stop();
    throw error;
  });
  return runAdapter(agent, command);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[backchannel-acp] ${(error as Error).message}\n`);
    process.exit(1);
  },
);
