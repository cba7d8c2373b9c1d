/**
 * Real hubs and CLI processes for the hub tests: `backchannel serve` in a private directory with its
 * control endpoint at `<dir>/control.sock` (passed to clients through BACKCHANNEL_CONTROL), and the
 * `backchannel` command run against it. Everything started here is stopped after the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach } from 'vitest';
import { ROOT, tempDir, waitFor } from '../../helpers/core.js';
import { killAgentsUnder } from '../../helpers/processes.js';
import { anyCommandConfig } from '../../helpers/run-policy.js';

export const BIN = path.join(ROOT, 'bin', 'backchannel.js');

export interface HubEnv {
  dir: string;
  /** Environment for every process of this test: the control endpoint, state and socket dirs. */
  env: NodeJS.ProcessEnv;
  socket: string;
}

/** A private directory and the environment that points clients at a hub there. */
export function hubEnv(): HubEnv {
  const dir = tempDir('bc-hub-');
  const socket = path.join(dir, 'control.sock');
  ipcDirs.push(path.join(dir, 'ipc'));
  const env = {
    ...process.env,
    BACKCHANNEL_CONTROL: socket,
    XDG_STATE_HOME: path.join(dir, 'state'),
    // Keys and tokens a hub makes (MCP over HTTP's, the gateway's) stay in the test's directory, never the user's.
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    XDG_RUNTIME_DIR: '',
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
    // The fixtures are arbitrary command lines sent over the control endpoint (MCP, the gateway).
    BACKCHANNEL_CONFIG: anyCommandConfig(dir),
  };
  return { dir, env, socket };
}

export interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
}

const started: ChildProcess[] = [];
/** The endpoint directories of this test's hubs: their agents are killed after it (see killAgentsUnder). */
const ipcDirs: string[] = [];
afterEach(async () => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
  }
  for (const dir of ipcDirs.splice(0)) killAgentsUnder(dir);
});

/** Starts `backchannel <args>` with `env`; killed after the test if still running. */
export function start(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Proc {
  const child = spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let out = '';
  let err = '';
  // Decoded as streams: a multibyte character split across two chunks stays whole.
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => (out += chunk));
  child.stderr!.on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `backchannel <args>` to the end: its exit code and output. */
export async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const proc = start(args, env);
  const code = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

export interface Hub extends Proc {
  /** The panel URL `serve` printed. */
  url: string;
}

/** The first match group of `pattern` in what `proc` printed, once it has; fails if `proc` exits first. */
export function printed(proc: Proc, pattern: RegExp, what: string, timeoutMs = 45_000): Promise<string> {
  return waitFor(
    () => {
      if (proc.child.exitCode !== null) throw new Error(`${what}: it exited first: ${proc.stderr()}`);
      return pattern.exec(proc.stdout())?.[1];
    },
    what,
    timeoutMs, // 45 s by default: generous for a busy machine (npm test runs the browser suite beside vitest), within the 60 s test timeout
    25,
  );
}

/** `backchannel serve` as the hub; resolves once its panel URL is printed (the control endpoint listens by then). */
export async function startHub(hub: HubEnv, timeoutMs?: number): Promise<Hub> {
  const proc = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env);
  const url = await printed(proc, /Backchannel panel: (\S+)/, 'serve to print its URL', timeoutMs);
  return { ...proc, url };
}
