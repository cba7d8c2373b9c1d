/**
 * The door a task came through, judged by the run policy: `cli` is the owner's own `backchannel run`
 * (trusted, as is a spec without an origin: the owner's own program using the broker); every other
 * door runs only what the policy allows — `mcp` (a model's tool call), `panel` (New task, Retry),
 * `gateway` (a model API request), `control` (anything else over the hub's control endpoint),
 * `schedule` (a fire of a schedule on the hub: judged when the schedule is created and at every fire).
 */
export type TaskOrigin = 'cli' | 'mcp' | 'panel' | 'gateway' | 'control' | 'schedule';

/** Every origin (for validating one sent from outside). */
export const TASK_ORIGINS = ['cli', 'mcp', 'panel', 'gateway', 'control', 'schedule'] as const satisfies readonly TaskOrigin[];
