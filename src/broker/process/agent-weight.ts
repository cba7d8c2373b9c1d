/**
 * The agents' weight on the CPU: together, the agents a broker runs weigh about what one session
 * weighs, so the hub that runs them keeps a share of its own.
 *
 * Why it is needed: every agent leads a session of its own (it is spawned detached, so that its
 * whole tree can be killed as one process group), and on Linux with autogroup
 * (`kernel.sched_autogroup_enabled`, on by default in most distributions' kernels) the scheduler
 * shares the CPU equally between sessions, not processes. Fifty agents starting at once then weigh
 * fifty times the hub, and the hub's loop waits behind them for a core: a control request took
 * 150 ms at the median against 5 ms idle, whatever the agents' own nice value (it only weighs inside
 * their own session). docs/performance.md, "The agents' weight on the CPU", has the measurements.
 *
 * What the spawner thread does with this (spawner-thread.ts): with `running` agents alive, each
 * agent's session gets the autogroup nice `agentNice(running)`, the lowest nice at which `running`
 * of them together weigh at most one session at nice 0; it is set again for every running agent
 * whenever the count changes, so a lone agent runs at nice 0, exactly as before. Where there is no
 * autogroup (macOS, autogroup off; Windows is left alone), the agent's own nice is set once, when it starts: raising a
 * nice needs no privilege, lowering it again does, so it is not lowered later. Either way this only
 * weighs the agents against each other and the hub when the CPU is short; an idle core still runs
 * them at full speed.
 */

/** How agents weigh (BrokerOptions.agentCpu): together about one session, or each a whole one. */
export const AGENT_CPU = ['shared', 'full'] as const;
export type AgentCpu = (typeof AGENT_CPU)[number];

/** The kernel's weight of each nice value, 0 to 19 (`sched_prio_to_weight` in kernel/sched/core.c). */
export const NICE_WEIGHTS = [1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15] as const;

/** The highest nice, and so the lightest weight, there is. */
export const MAX_NICE = 19;

/** The weight of one session at nice 0, which all the running agents together do not exceed. */
const ONE_SESSION = NICE_WEIGHTS[0];

/** The nice each of `running` agents gets: the lowest at which they together weigh ≤ one session (19 at most). */
export function agentNice(running: number): number {
  const nice = NICE_WEIGHTS.findIndex((weight) => weight * Math.max(1, running) <= ONE_SESSION);
  return nice === -1 ? MAX_NICE : nice;
}

/** `agentNice` for 0 to AGENT_NICE_TABLE.length - 1 running agents, for the spawner thread's source; beyond, MAX_NICE. */
export const AGENT_NICE_TABLE: readonly number[] = Array.from(
  { length: Math.floor(ONE_SESSION / NICE_WEIGHTS[MAX_NICE]) + 1 },
  (_, running) => agentNice(running),
);
