/**
 * The client's entry, the one way a front-end (the CLI, the gateway, MCP) reaches tasks: `openClient`
 * decides hub or not, `BackchannelClient` is the whole surface, `createInMemoryPair` tests a
 * front-end against a real broker without sockets. Front-ends import this, the task model and the
 * config — nothing of the hub or the core (a dependency rule in `npm test` says so).
 */
export { createClient, type BackchannelClient } from './client.js';
export { createInMemoryPair, type InMemoryPair } from './in-memory.js';
export { clientOf, NO_HUB, openClient, type OpenClientOptions, type WithoutHub } from './open.js';
export type { TaskBackend, TaskLoad, TaskPlace, TaskRun } from './tasks.js';
export { defaultWorktreeDir, type ChangeService } from './changes.js';
export { isHubLost } from './hub-client.js';
export { UntrustedEndpointError } from './discover.js';
export { readStats, SKIP_REASONS, type ScheduleStats, type StatsReport } from './stats.js';
export { BridgeError, type ErrorCode } from '../model/errors.js';

// What a front-end needs of the layers under the client, through this one door: the wire's types
// and a task's handle and limits (the task model), the logger (the base leaf), a task's failure and
// the options of a broker of its own (`openClient({ withoutHub: 'private' })`: the core's public
// entry, broker/index.ts — never another file of the core; a dependency rule says so).
export type * from '../bridge/contract.js';
export type { TaskHandle } from '../model/handle.js';
export { FIRE_PAGE_SIZE, formatLimit, MAX_FIRE_PAGE_SIZE, MAX_INPUT_BYTES } from '../model/limits.js';
export { durationTooLong, MAX_DURATION_MS } from '../model/duration.js';
export { createHeadlessLogger, silentLogger, type Logger } from '../base/log.js';
export { BrokerError, DEFAULTS, planNewWorktree, TaskError, type BrokerOptions, type EnvPolicy, type RunRule } from '../broker/index.js';
// A front-end that starts a process of its own (the gateway asks the Cursor CLI for its models)
// ends its whole tree the way the core ends an agent's. (Its file is the core's; it moves to base/
// with its owner's next change: the one exception of the rule.)
export { killTree } from '../base/kill-tree.js';
/** The owner's named ACP agents as presets (`run --acp-agent <name>` starts one; docs/acp.md). */
export { acpAgentPresets } from '../hub/acp-agents.js';
