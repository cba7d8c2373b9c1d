/**
 * The ACP adapter program: a Backchannel sub-agent that runs an ACP agent as its child and speaks ACP
 * to it through the official SDK, so the broker's guards, questions, budgets and history apply to any
 * ACP agent (docs/acp.md). Run as
 *
 *   node dist/acp/main.js -- <agent command> [agent args…]
 *
 * with the task hand-off as for any agent (CURSOR_TASK_ID, CURSOR_IPC_PATH, --task-id=) and its
 * settings in BACKCHANNEL_ACP (settings.ts). The agent command comes from argv only, never the input.
 *
 * Or as a spare, started before its task (the broker's warm adapter, docs/acp.md):
 *
 *   node dist/acp/main.js --spare
 *
 * which loads the rest of the adapter at once, then waits for its task as one line on its stdin
 * (./hand-off.ts: the directory, the environment, the agent's command line); at the end of its stdin
 * without one, it exits 0; a bad line is a one-line error on stderr and exit code 2.
 */
import { agentEnv } from './agent-env.js';
import { agentCommandLine, startAgent, type AgentProcess } from './agent-process.js';
import { applyHandOff, HandOffError, parseHandOff, readHandOffLine } from './hand-off.js';

type Adapter = typeof import('./adapter.js');

/** Starts the agent, then runs the task with the adapter once it has loaded. */
async function run(command: string | undefined, args: string[], loading: Promise<Adapter>): Promise<number> {
  const agent: AgentProcess | undefined = command === undefined ? undefined : startAgent(command, args, process.cwd(), agentEnv());
  const { runAdapter } = await loading.catch(async (error: unknown) => {
    await agent?.stop();
    throw error;
  });
  return runAdapter(agent, command);
}

async function main(): Promise<number> {
  if (process.argv[2] === '--spare') return spare();
  const [command, ...args] = agentCommandLine(process.argv);
  // The agent boots first, while this process loads the rest of the adapter (./adapter.ts: zod, the
  // ACP SDK, the agent runtime; one file in a build) and connects to its task: only this file's few
  // imports come before it.
  return run(command, args, import('./adapter.js'));
}

/** The warm adapter: everything loaded while it waits; the task's directory and environment applied before the agent starts. */
async function spare(): Promise<number> {
  const loading = import('./adapter.js');
  // Its failure is the task's, once there is one (run() reports it).
  loading.catch(() => {});
  const line = await readHandOffLine(process.stdin);
  if (line === undefined) return 0;
  const handOff = parseHandOff(line);
  applyHandOff(handOff);
  const [command, ...args] = handOff.agent;
  return run(command, args, loading);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const bad = error instanceof HandOffError;
    process.stderr.write(`[backchannel-acp] ${bad ? 'bad hand-off: ' : ''}${(error as Error).message}\n`);
    process.exit(bad ? 2 : 1);
  },
);
