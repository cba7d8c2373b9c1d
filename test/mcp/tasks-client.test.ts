/**
 * docs/mcp.md's client of the MCP Tasks extension, exactly as written there (its `js tested-by=` block), run as a
 * user runs it: `node tasks-client.mjs` in a bare environment with `backchannel` on PATH, the official SDK v2 client
 * and `@modelcontextprotocol/ext-tasks` starting a real `backchannel mcp` over stdio, against a real hub. It gets a
 * task at once, then the task's result; the hub's history has that task, succeeded. And why the recipe exists: the
 * SDK v2 client's own `callTool` refuses the task answer once the extension is declared.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, ROOT } from '../helpers/core.js';
import { BIN, cli, hubEnv, printed, start, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { connectStdio } from './modern-client.js';

const RECIPE = /^```js tested-by=test\/mcp\/tasks-client\.test\.ts\n([\s\S]*?)^```$/m;
const RUN_LIMIT_MS = 45_000;

/** The block of docs/mcp.md that names this file, as written. */
function recipe(): string {
  const block = RECIPE.exec(fs.readFileSync(path.join(ROOT, 'docs', 'mcp.md'), 'utf8'))?.[1];
  if (!block) throw new Error('docs/mcp.md has no ```js tested-by=test/mcp/tasks-client.test.ts block');
  return block;
}

/**
 * A user's machine in the hub's directory: a home of its own (so the hub and `backchannel mcp` meet at its default
 * data directory, as on a fresh machine), `backchannel` on PATH, and the packages the recipe imports beside it.
 */
function userMachine(): HubEnv {
  const hub = hubEnv();
  const bin = path.join(hub.dir, 'bin');
  fs.mkdirSync(bin);
  fs.mkdirSync(path.join(hub.dir, 'home'));
  fs.symlinkSync(BIN, path.join(bin, 'backchannel'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(hub.dir, 'node_modules'));
  const env = { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, HOME: path.join(hub.dir, 'home') };
  // The hub's agents run under the test's endpoint directory, so that anything left is killed after the test.
  return { ...hub, env: { ...env, CURSOR_IPC_DIR: hub.env.CURSOR_IPC_DIR } };
}

/** `node <file>` in `cwd` with `env`, to its end (killed past RUN_LIMIT_MS): its exit code and output. */
function runNode(file: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("docs/mcp.md's client of the Tasks extension", () => {
  test('as written, it gets a task at once and then its result, from a task the hub ran', async () => {
    const machine = userMachine();
    const serve = start(['serve'], machine.env);
    await printed(serve, /Backchannel panel: (\S+)/, 'serve to print its URL');
    const file = path.join(machine.dir, 'tasks-client.mjs');
    fs.writeFileSync(file, recipe());
    // The user's shell: no XDG or Backchannel variables, only HOME and PATH.
    const ran = await runNode(file, machine.dir, { PATH: machine.env.PATH, HOME: machine.env.HOME });
    expect(ran.code, ran.stderr).toBe(0);
    const [first, second, ...rest] = ran.stdout.trim().split('\n');
    const taskId = /^task ([0-9a-f-]{36})$/.exec(first ?? '')?.[1];
    expect(taskId, ran.stdout).toBeDefined();
    expect(JSON.parse(second!)).toMatchObject({
      task_id: taskId,
      state: 'succeeded',
      done: true,
      result: { summary: 'did 20 steps' },
    });
    expect(rest).toEqual([]);
    const tasks = await cli(['tasks', '--json', '--limit', '20'], machine.env);
    expect(tasks.code, tasks.stderr).toBe(0);
    const listed = (JSON.parse(tasks.stdout) as { id: string; state: string; tags?: Record<string, string> }[]).find(
      (task) => task.id === taskId,
    );
    expect(listed).toMatchObject({ state: 'succeeded' });
  });

  test("without it, the SDK v2 client's callTool and request() refuse the task answer once the extension is declared", async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connectStdio(hub, { tasks: true });
    const call = client.callTool({ name: 'run_task', arguments: { command: process.execPath, args: [fixture('quick.mjs')] } });
    await expect(call).rejects.toThrow("Unsupported result type 'task'");
    const request = client.request({
      method: 'tools/call',
      params: { name: 'run_task', arguments: { command: process.execPath, args: [fixture('quick.mjs')] } },
    });
    await expect(request).rejects.toThrow("Unsupported result type 'task'");
  });
});
