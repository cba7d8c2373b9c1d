/** ACP tasks, the broker's entry to them (see ./acp-tasks.ts). */
export { AcpTasks, defaultAdapterPath } from './acp-tasks.js';
export {
  ACP_SETTINGS_ENV,
  agentPresetName,
  approvalsFor,
  DEFAULT_APPROVALS,
  parseAcpConfig,
  TOOL_KINDS,
  type AcpAgent,
  type AcpOptions,
  type AcpSettings,
  type Approvals,
  type Decision,
  type ToolKind,
} from './settings.js';
