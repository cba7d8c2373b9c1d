/**
 * Runs the ACP adapter (dist/acp/main.js, built by `tsc`) under a real broker with the scriptable ACP
 * fixture agent (test/fixtures/acp/agent.mjs), and reads what the agent left behind.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TaskHandle } from '../../src/broker/index.js';
import type { TaskSpec } from '../../src/model/task.js';
import { ROOT, fixture, tempDir, waitFor } from '../helpers/core.js';

export const ADAPTER = path.join(ROOT, 'dist/acp/main.js');
export const FIXTURE_AGENT = fixture('acp/agent.mjs');

/** A prompt the fixture agent plays as a script of steps. */
export function script(steps: unknown[], words = 'do it'): string {
  return `${words} SCRIPT:${JSON.stringify(steps)}`;
}

export interface AcpCase {
  /** The task's directory (the agent's cwd, fs confinement's root). */
  cwd: string;
  /** Where the fixture keeps its sessions. */
  state: string;
  spec(input: unknown, options?: { settings?: Record<string, unknown>; env?: Record<string, string>; agentArgs?: string[] }): TaskSpec;
  /** The ids of sessions the fixture was sent `session/cancel` for. */
  cancelledSessions(): string[];
}

export function acpCase(): AcpCase {
  const cwd = tempDir('bc-acp-cwd-');
  const state = tempDir('bc-acp-state-');
  return {
    cwd,
    state,
    spec: (input, { settings, env, agentArgs } = {}) => ({
      command: ADAPTER,
      args: ['--', FIXTURE_AGENT, ...(agentArgs ?? [])],
      input,
      cwd,
      env: { ACP_FIXTURE_STATE: state, ...(settings ? { BACKCHANNEL_ACP: JSON.stringify(settings) } : {}), ...env },
    }),
    cancelledSessions: () =>
      readdirSync(state)
        .filter((f) => f.endsWith('.cancelled'))
        .map((f) => f.slice(0, -'.cancelled'.length)),
  };
}

/** Waits for the task's next question and returns it; fails at once, saying why, if the task ends first. */
export async function nextQuestion(handle: TaskHandle, after?: string) {
  return waitFor(
    () => {
      const snapshot = handle.snapshot();
      const q = snapshot.pendingQuestion;
      if (q && q.askId !== after) return q;
      if (snapshot.endedAt !== undefined) throw new Error(`the task ended before asking: ${snapshot.state} ${snapshot.message ?? ''}`);
      return undefined;
      // Generous: two Node processes start on a machine other suites load too; the task's end fails it at once.
    },
    'a question',
    30_000,
  );
}

export function readIfThere(file: string): string | undefined {
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}

/** The pids of the fixture agents started for this case. */
export function agentPids(state: string): number[] {
  return readdirSync(state)
    .filter((f) => /^agent-\d+\.pid$/.test(f))
    .map((f) => Number(f.slice('agent-'.length, -'.pid'.length)));
}
