/**
 * Real ACP agents (pinned, installed into .cache/clients/) run as Backchannel tasks on a real hub
 * (`backchannel serve`) whose config names each agent (`acp: agents:`), driven with the CLI as a
 * person would: `run --detach --acp-agent`, `answer`, `cancel`, `wait`, `--follow-up`. Each agent
 * talks to a local fake model server (test/helpers/fake-*.ts). Shared by test/clients/acp-*.clients.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { tempDir, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub, type HubEnv } from '../hub/control/hub-process.js';

/** A named agent as the owner's config writes it. */
export interface AgentEntry {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

/** What `wait --json` prints: the final payload, or for a failure its reason with the payload inside. */
export interface Waited {
  status: string;
  data: Record<string, any>;
  meta: Record<string, any>;
  message?: string;
  payload?: { data: Record<string, any>; meta: Record<string, any> };
}

/** A hub whose config allows any command and names `agents` (JSON is YAML), started. */
export async function acpHub(agents: Record<string, AgentEntry>): Promise<HubEnv> {
  const hub = hubEnv();
  const yaml = ['run_policy:', '  allow:', '    - command: "*"', `acp: ${JSON.stringify({ agents })}`].join('\n');
  fs.writeFileSync(hub.env.BACKCHANNEL_CONFIG!, `${yaml}\n`);
  await startHub(hub);
  return hub;
}

/** `run --detach --acp-agent <name>` in `cwd` with `prompt`: the task's id. */
export async function startAgentTask(hub: HubEnv, name: string, cwd: string, prompt: string, extra: string[] = []): Promise<string> {
  const started = await cli(['run', '--detach', '--acp-agent', name, '--cwd', cwd, '--input', JSON.stringify(prompt), ...extra], hub.env);
  expect(started.code, started.stderr).toBe(0);
  return started.stdout.trim();
}

export async function snapshot(hub: HubEnv, id: string): Promise<TaskSnapshot | undefined> {
  const { stdout } = await cli(['tasks', '--json'], hub.env);
  return (JSON.parse(stdout) as TaskSnapshot[]).find((t) => t.id === id);
}

/** The task's pending question, once it asks (an agent's first turn may take a while to start). */
export async function pendingQuestion(hub: HubEnv, id: string): Promise<NonNullable<TaskSnapshot['pendingQuestion']>> {
  return waitFor(async () => (await snapshot(hub, id))?.pendingQuestion, `task ${id}'s approval question`, 90_000, 200);
}

export async function waited(hub: HubEnv, id: string): Promise<Waited> {
  const { stdout, stderr } = await cli(['wait', '--json', id], hub.env);
  try {
    return JSON.parse(stdout) as Waited;
  } catch {
    throw new Error(`wait printed no payload: ${stdout.slice(0, 300)} ${stderr.slice(0, 300)}`);
  }
}

/** `backchannel answer <id> <option>`, which must be accepted. */
export async function answer(hub: HubEnv, id: string, option: string): Promise<void> {
  const answered = await cli(['answer', id, option], hub.env);
  expect(answered.code, answered.stderr).toBe(0);
}

/** A working directory for one case with `hello.txt` saying "old". */
export function project(prefix: string): { dir: string; file: string } {
  const dir = fs.realpathSync(tempDir(prefix));
  const file = path.join(dir, 'hello.txt');
  fs.writeFileSync(file, 'old\n');
  return { dir, file };
}

/** The processes whose working directory is `dir` or below it (an agent and everything it started). */
export function processesIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = fs.readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Waits until no process runs in `dir` (the task's whole tree is gone). */
export async function treeGone(dir: string): Promise<void> {
  await waitFor(() => processesIn(dir).length === 0, `every process in ${dir} to be gone`, 20_000, 100);
}
