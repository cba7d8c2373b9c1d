/**
 * The spare adapter's hand-off (`main.js --spare`, docs/acp.md "The warm adapter"): a spare starts
 * before its task and loads the adapter while it waits; its task arrives as ONE JSON line on its
 * stdin — `{"cwd": "/abs/dir", "env": {NAME: value…}, "agent": ["command", "arg"…]}` — never in
 * argv or a file: the environment holds the task's token and settings. The spare then enters the
 * task's directory and takes the task's environment as its own, before it starts the agent, so the
 * agent runs as it would under a fresh adapter (and in the spare's process group, the task's).
 * Imports nothing but Node: it runs before the rest of the adapter has loaded.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';

export interface HandOff {
  /** The task's working directory (absolute). */
  cwd: string;
  /** The task's whole environment, the hand-off variables (id, endpoint, token) and BACKCHANNEL_ACP included. */
  env: Record<string, string>;
  /** The agent's command line, as after `--` in a fresh adapter's argv. */
  agent: string[];
}

/** Longer than any environment a task is given; a line past it is refused, not buffered on. */
export const MAX_HAND_OFF_BYTES = 1024 * 1024;

/** Why a hand-off is refused: one line, said on stderr, and the spare exits with code 2. */
export class HandOffError extends Error {
  override readonly name = 'HandOffError';
}

/** The first line of `input`; undefined when it ended before any byte (the broker closed without a task). */
export function readHandOffLine(input: Readable): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (error: Error | undefined, line?: string) => {
      input.off('data', onData).off('end', onEnd).off('error', onError);
      input.destroy();
      if (error) reject(error);
      else resolve(line);
    };
    const onData = (chunk: Buffer) => {
      const newline = chunk.indexOf(0x0a);
      const taken = newline === -1 ? chunk : chunk.subarray(0, newline);
      size += taken.length;
      if (size > MAX_HAND_OFF_BYTES) return done(new HandOffError(`the hand-off line is over ${MAX_HAND_OFF_BYTES} bytes`));
      chunks.push(taken);
      if (newline !== -1) done(undefined, Buffer.concat(chunks).toString('utf8'));
    };
    const onEnd = () => done(undefined, size === 0 ? undefined : Buffer.concat(chunks).toString('utf8'));
    const onError = (error: Error) => done(new HandOffError(`could not read the hand-off: ${error.message}`));
    input.on('data', onData).once('end', onEnd).once('error', onError);
  });
}

/** The hand-off in `line`, checked; a HandOffError saying what is wrong otherwise. */
export function parseHandOff(line: string): HandOff {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new HandOffError('the hand-off line is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new HandOffError('the hand-off is not a JSON object');
  const { cwd, env, agent } = value as Record<string, unknown>;
  if (typeof cwd !== 'string' || !path.isAbsolute(cwd)) throw new HandOffError('the hand-off has no absolute `cwd`');
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new HandOffError('the hand-off has no `env` object');
  if (Object.values(env).some((v) => typeof v !== 'string')) throw new HandOffError('the hand-off `env` has a value that is not a string');
  if (!Array.isArray(agent) || agent.length === 0 || agent.some((part) => typeof part !== 'string' || part === '')) {
    throw new HandOffError('the hand-off `agent` is not a command line (a non-empty array of strings)');
  }
  return { cwd, env: env as Record<string, string>, agent: agent as string[] };
}

/** Enters the task's directory and makes its environment this process's own (nothing of the spare's stays). */
export function applyHandOff(handOff: HandOff): void {
  try {
    process.chdir(handOff.cwd);
  } catch (error) {
    throw new HandOffError(
      `cannot enter the task's directory ${handOff.cwd}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, handOff.env);
}
