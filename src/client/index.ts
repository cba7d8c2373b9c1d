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
export { BridgeError, type ErrorCode } from '../model/errors.js';

// What a front-end needs of the layers under the client, through this one door: the wire's types,
// a task's failure, and the options of a broker of its own (`openClient({ withoutHub: 'private' })`).
export type * from '../bridge/contract.js';
export { FIRE_PAGE_SIZE, formatLimit, MAX_FIRE_PAGE_SIZE, MAX_INPUT_BYTES } from '../model/limits.js';
export { BrokerError, TaskError } from '../broker/errors.js';
export type { TaskHandle } from '../broker/types.js';
export type { BrokerOptions, EnvPolicy } from '../broker/index.js';
export type { RunRule } from '../broker/run-policy.js';
export { DEFAULTS } from '../broker/settings.js';
export { durationTooLong, MAX_DURATION_MS } from '../broker/guards/duration.js';
/** Checks a coding task's repository and base as the broker will (the gateway's `worktree: true` models, at start). */
export { planNewWorktree } from '../broker/worktree/worktrees.js';
export { createHeadlessLogger, silentLogger, type Logger } from '../broker/log.js';
// A front-end that starts a process of its own (the gateway asks the Cursor CLI for its models)
// ends its whole tree the way the core ends an agent's.
export { killTree } from '../broker/process/kill-tree.js';
/** The owner's named ACP agents as presets (`run --acp-agent <name>` starts one; docs/acp.md). */
export { acpAgentPresets } from '../hub/acp-agents.js';
