import {
  ARG_TASK_ID,
  ENV_HEARTBEAT_MS,
  ENV_IPC_PATH,
  ENV_IPC_TOKEN,
  ENV_SPOOL_DIR,
  ENV_TASK_ATTEMPT,
  ENV_TASK_ID,
} from '../protocol/index.js';

/** Where this agent reports to, as handed over by the broker. */
export interface TaskLocation {
  taskId: string;
  ipcPath?: string;
  token?: string;
  attempt: number;
  heartbeatMs?: number;
  spoolDir?: string;
}

export class AgentRuntimeError extends Error {
  override readonly name = 'AgentRuntimeError';
}

/**
 * Reads the hand-off: `--task-id=` first (some frameworks wipe the environment), then the environment.
 * Fails loudly when there is no task id: the agent is not running under Backchannel.
 */
export function locateTask(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): TaskLocation {
  const fromArgv = argv.find((arg) => arg.startsWith(ARG_TASK_ID))?.slice(ARG_TASK_ID.length);
  const taskId = fromArgv || env[ENV_TASK_ID];
  if (!taskId) {
    throw new AgentRuntimeError(
      `No task id: neither ${ARG_TASK_ID}<id> in argv nor ${ENV_TASK_ID} in the environment. ` +
        'Run this agent under Backchannel, e.g. `backchannel run -- node agent.js`.',
    );
  }
  const location: TaskLocation = { taskId, attempt: Number(env[ENV_TASK_ATTEMPT]) || 1 };
  if (env[ENV_IPC_PATH]) location.ipcPath = env[ENV_IPC_PATH];
  if (env[ENV_IPC_TOKEN]) location.token = env[ENV_IPC_TOKEN];
  if (env[ENV_SPOOL_DIR]) location.spoolDir = env[ENV_SPOOL_DIR];
  const heartbeat = Number(env[ENV_HEARTBEAT_MS]);
  if (Number.isFinite(heartbeat) && heartbeat > 0) location.heartbeatMs = heartbeat;
  return location;
}
