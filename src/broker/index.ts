/** Public library API of Backchannel (Electron-free). */
export { TaskBroker, DEFAULTS, type BrokerOptions, type BrokerStats, type TaskHandle } from './broker.js';
export { TaskError, BrokerError } from './errors.js';
export type { HeldTask, KindContext, KindStep, TaskKind, TaskRun } from './task-kinds.js';
export type * from '../model/task.js';
export type * from '../model/insights.js';
export { createHeadlessLogger, silentLogger, type Logger } from '../base/log.js';
export type { EnvPolicy } from './process/environment.js';
export type { RunRule } from './run-policy.js';
/** Checks a coding task's repository and base as the broker will, before any task (a front-end that promises worktrees). */
export { planNewWorktree } from './coding/index.js';
export type { TokenBudgetOptions } from './guards/token-budget.js';
export type { ChannelLimits } from './transport/channel.js';
export type { FinalPayload, Payload, PayloadMeta, PayloadStatus } from '../protocol/index.js';
