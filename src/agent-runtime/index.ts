/**
 * Backchannel agent runtime: the SDK a sub-agent uses to talk to its broker.
 * No dependencies beyond Node itself (and no Electron), so it stays cheap to start.
 */
export { runAgent, type RunAgentOptions } from './run-agent.js';
export { AgentTask, TaskCancelledError, printToStdout, type AskOptions, type CallToolOptions, type ConnectTaskOptions } from './task.js';
export { AgentRuntimeError, locateTask, type TaskLocation } from './locate.js';
export { sendOnce, type SendOutcome } from './send-once.js';
export type {
  Payload,
  PayloadMeta,
  FinalStatus,
  OfferedTool as ToolDefinition,
  ApprovalContext,
  ApprovalOption,
} from '../protocol/index.js';

import { AgentTask, type ConnectTaskOptions } from './task.js';

/** Connects to the task without the `runAgent` wrapper (send the final payload yourself). */
export function connectTask<Input = unknown>(options?: ConnectTaskOptions): Promise<AgentTask<Input>> {
  return AgentTask.connect<Input>(options);
}
