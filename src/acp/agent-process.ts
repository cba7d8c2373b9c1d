/**
 * The ACP agent child: started from the adapter's own argv (never from the task's input), with its
 * stdin and stdout as the ACP stream and its stderr passed through to the task's log. It stays in the
 * adapter's process group, so the broker's one process-tree kill reaches it; `stop()` ends it sooner.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { ARG_TASK_ID } from '../protocol/index.js';

const JS_FILE = /\.(mjs|cjs|js)$/i;
const TS_FILE = /\.(mts|cts|ts)$/i;
/** Between closing the agent's stdin and SIGTERM, and between SIGTERM and SIGKILL. */
const STOP_GRACE_MS = 1000;

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why it could not start (ENOENT: "command not found: x"). */
  error?: string;
}

export interface AgentProcess {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  /** Settles once the child has exited (or failed to start: code null, signal null). */
  readonly exited: Promise<AgentExit>;
  /** Set once it has exited. */
  exit(): AgentExit | undefined;
  /** Ends the agent: stdin closed, then SIGTERM, then SIGKILL; resolves when it is gone. */
  stop(): Promise<AgentExit>;
}

/** The agent's command line: everything after `--` (or every argument), less the broker's `--task-id=`. */
export function agentCommandLine(argv: readonly string[]): string[] {
  const rest = argv.slice(2);
  const dashes = rest.indexOf('--');
  const line = dashes === -1 ? rest : rest.slice(dashes + 1);
  return line.filter((arg) => !arg.startsWith(ARG_TASK_ID));
}

/** A `.js`/`.mjs`/`.ts` file or `node` runs with this Node; anything else is left to the OS. */
export function resolveAgentCommand(command: string, args: string[]): { file: string; args: string[] } {
  if (command === 'node') return { file: process.execPath, args };
  if (JS_FILE.test(command)) return { file: process.execPath, args: [command, ...args] };
  if (TS_FILE.test(command)) {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    return { file: process.execPath, args: ['--import', tsx, command, ...args] };
  }
  return { file: command, args };
}

export function startAgent(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): AgentProcess {
  const resolved = resolveAgentCommand(command, args);
  const child = spawn(resolved.file, resolved.args, { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
  let exit: AgentExit | undefined;
  const exited = new Promise<AgentExit>((resolve) => {
    child.once('exit', (code, signal) => resolve((exit = { code, signal })));
    child.once('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'ENOENT' ? `command not found: ${command}` : `could not start ${command}: ${error.message}`;
      resolve((exit ??= { code: null, signal: null, error: why }));
    });
  });
  // A dead agent's pipes fail writes with EPIPE: the exit tells the story, not an unhandled error.
  child.stdin.on('error', () => {});
  child.stdout.on('error', () => {});
  const stop = async (): Promise<AgentExit> => {
    if (exit) return exit;
    child.stdin.end();
    const signalAfter = (signal: NodeJS.Signals) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          if (!exit) child.kill(signal);
          resolve();
        }, STOP_GRACE_MS);
        void exited.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    await signalAfter('SIGTERM');
    await signalAfter('SIGKILL');
    return exited;
  };
  return { child, exited, exit: () => exit, stop };
}

/** How an exit reads in a message: "code 3" or "signal SIGKILL". */
export function describeExit(exit: AgentExit): string {
  if (exit.error) return exit.error;
  if (exit.signal) return `signal ${exit.signal}`;
  return `code ${exit.code ?? 'unknown'}`;
}
