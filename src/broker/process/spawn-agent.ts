/**
 * Starts a sub-agent process in its own process group with piped stdout/stderr and stdin closed (a
 * spare's stdin is a pipe: `spawnSpare`), through the spawner thread (spawner.ts), so the hub's loop
 * never waits on a fork and exec.
 * JavaScript and TypeScript files run with this very runtime: inside a packaged Electron app there
 * is no `node` on PATH, so `process.execPath` with ELECTRON_RUN_AS_NODE=1 is the Node we have.
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentCpu } from './agent-weight.js';
import { defaultSpawner, type AgentProcess, type SpareProcess, type SpawnRequest, type Spawner } from './spawner.js';

export type { AgentProcess, SpareProcess } from './spawner.js';

const JS_FILE = /\.(mjs|cjs|js)$/i;
const TS_FILE = /\.(mts|cts|ts)$/i;
const runningInElectron = Boolean(process.versions.electron);

let tsxLoader: string | undefined;
function tsxImport(): string {
  if (!tsxLoader) {
    const require = createRequire(import.meta.url);
    tsxLoader = pathToFileURL(require.resolve('tsx')).href;
  }
  return tsxLoader;
}

export interface ResolvedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * Maps `node`, `*.js` and `*.ts` commands onto this runtime; leaves anything else to the OS.
 * `runtime` defaults to the current process (tests pass an Electron-like one).
 */
export function resolveCommand(
  command: string,
  args: string[],
  runtime: { execPath: string; electron: boolean } = { execPath: process.execPath, electron: runningInElectron },
): ResolvedCommand {
  // The env var is set only on the child's env object: leaked into ours, it would make any Electron
  // app started later boot as plain Node.
  const nodeEnv: Record<string, string> = runtime.electron ? { ELECTRON_RUN_AS_NODE: '1', ELECTRON_NO_ASAR: '1' } : {};
  if (command === 'node' || command === 'node.exe') return { file: runtime.execPath, args, env: nodeEnv };
  if (JS_FILE.test(command)) return { file: runtime.execPath, args: [command, ...args], env: nodeEnv };
  if (TS_FILE.test(command)) return { file: runtime.execPath, args: ['--import', tsxImport(), command, ...args], env: nodeEnv };
  return { file: command, args, env: {} };
}

export class SpawnError extends Error {
  override readonly name = 'SpawnError';
}

/** Checks what `spawn` would report only as an ambiguous ENOENT. */
export function checkWorkingDirectory(cwd: string): void {
  let stat;
  try {
    stat = statSync(cwd);
  } catch {
    throw new SpawnError(`working directory does not exist: ${cwd}`);
  }
  if (!stat.isDirectory()) throw new SpawnError(`working directory is not a directory: ${cwd}`);
}

/** Starts the agent; its pid comes with the 'spawn' event, a failure as 'error' (see spawner.ts). */
export function spawnAgent(
  command: ResolvedCommand,
  cwd: string,
  env: Record<string, string>,
  cpu: AgentCpu = 'shared',
  spawner: Spawner = defaultSpawner(),
): AgentProcess {
  return spawner.spawn(requestFor(command, cwd, env, cpu));
}

/**
 * Starts a spare (spawner.ts `SpareProcess`): in its own process group as any agent, its stdin a pipe
 * on which it waits for its task; not weighed, and keeping nothing alive, until its `handOff`.
 */
export function spawnSpare(
  command: ResolvedCommand,
  cwd: string,
  env: Record<string, string>,
  cpu: AgentCpu = 'shared',
  spawner: Spawner = defaultSpawner(),
): SpareProcess {
  return spawner.spawn({ ...requestFor(command, cwd, env, cpu), spare: true });
}

function requestFor(command: ResolvedCommand, cwd: string, env: Record<string, string>, cpu: AgentCpu): SpawnRequest {
  return {
    file: command.file,
    args: command.args,
    cwd: path.resolve(cwd),
    env: Object.keys(command.env).length > 0 ? { ...env, ...command.env } : env,
    // Own process group, so cancel can reach grandchildren (the thread never opens a console window on Windows).
    detached: process.platform !== 'win32',
    cpu,
  };
}

export function describeSpawnError(command: string, error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT') return `command not found: ${command}`;
  if (error.code === 'EACCES') return `command is not executable (permission denied): ${command}`;
  return `could not start ${command}: ${error.message}`;
}
