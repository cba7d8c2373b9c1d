/**
 * The spawner thread's side: the program a `Spawner` (spawner.ts) runs in its worker thread, and the
 * messages both sides exchange. The thread calls `child_process.spawn` on its own event loop, so the
 * fork and the wait for the child's exec hold that loop, not the hub's; it owns the children and
 * their pipes and forwards what they do.
 *
 * It is source text run with `new Worker(…, { eval: true })`, not a file beside this one: the same
 * text works from `src/` under the test runner, from `dist/`, and inside a packaged Electron app's
 * archive, where a worker file path would not resolve. It is plain CommonJS and imports only Node.
 *
 * Guarantees of the thread:
 * - every `spawn` request gets exactly one answer: `spawned` (with the pid) or `failed`;
 * - a spawned child's stdout/stderr bytes arrive in order as `data` (an ArrayBuffer of its own,
 *   transferred, never a view into a shared pool), then one `end` per stream; its exit as `exit`;
 *   `closed` last, once it has exited and both pipes are closed (after which the id is forgotten);
 * - flow control by credit: the thread stops reading a pipe once OUTPUT_WINDOW_BYTES of it are sent
 *   and not yet `ack`ed, and reads on when acks bring it below; the hub acks a chunk once its own
 *   stream has taken it within its buffer. A slow reader thus makes the child wait on its write (as
 *   with a pipe the hub reads itself), and what waits in messages between the threads is bounded too;
 *   `destroy` closes the pipe.
 * - the agents' weight on the CPU (agent-weight.ts): each running child's session gets the autogroup
 *   nice for the number running, set again whenever that number changes; without autogroup, the
 *   child's own nice is set once, when it starts. A child spawned with `cpu: 'full'` is neither
 *   weighed nor counted; a spare is weighed from its `handoff` on (idle, it weighs on nobody).
 * - a spare's stdin is a pipe, written once by `handoff` and then closed; every other child's stdin is
 *   closed from the start.
 */
import { AGENT_NICE_TABLE, MAX_NICE, type AgentCpu } from './agent-weight.js';

/** Bytes of one pipe sent to the hub and not yet acknowledged before the thread stops reading it. */
export const OUTPUT_WINDOW_BYTES = 128 * 1024;

/** A process to start (spawner.ts `Spawner.spawn`); it crosses to the thread as a `spawn` message. */
export interface SpawnRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Lead a process group of its own (POSIX). */
  detached: boolean;
  /** How the child weighs on the CPU (agent-weight.ts): `full` leaves it out of the weighing. @default 'shared' */
  cpu?: AgentCpu;
  /**
   * A spare: a process started before its task, waiting for it on its stdin (a pipe, not closed as
   * every other child's is). Until its `handOff` it neither keeps this process alive nor weighs on the
   * CPU as an agent; its output waits, flow-controlled, for whoever adopts it. @default false
   */
  spare?: boolean;
}

/**
 * Main → thread. `fd`: 1 for stdout, 2 for stderr. Both sides post arrays of these messages, in order:
 * what one side sends in one turn of its loop crosses as one message (one wake-up of the other side).
 */
export type ToThread =
  | ({ t: 'spawn'; id: number } & SpawnRequest)
  /** A spare's task: `line` written to its stdin, which then closes; from now on it is weighed as an agent. */
  | { t: 'handoff'; id: number; line: string }
  | { t: 'ack'; id: number; fd: 1 | 2; bytes: number }
  | { t: 'destroy'; id: number; fd: 1 | 2 };

/** What a failed spawn reports: the fields of Node's error that `describeSpawnError` reads. */
export interface SpawnFailure {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
}

/** Thread → main. */
export type FromThread =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'failed'; id: number; error: SpawnFailure }
  | { t: 'data'; id: number; fd: 1 | 2; chunk: ArrayBuffer }
  | { t: 'end'; id: number; fd: 1 | 2 }
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { t: 'closed'; id: number };

export const SPAWNER_THREAD_SOURCE = String.raw`
'use strict';
const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const { readFileSync, writeFileSync } = require('node:fs');
const { setPriority } = require('node:os');

const WINDOW = ${OUTPUT_WINDOW_BYTES};
// id -> { child, flows: { 1: flow, 2: flow } }; a flow is one pipe's credit state.
const children = new Map();
// Messages go out in batches: everything posted in one turn of this thread's loop is one postMessage
// (an array), so the hub's loop is woken and dispatches once per batch, not once per message.
let outbox = [];
let transfers = [];
const flush = () => {
  const batch = outbox;
  const transfer = transfers;
  outbox = [];
  transfers = [];
  parentPort.postMessage(batch, transfer);
};
const post = (message, transfer) => {
  if (outbox.length === 0) setImmediate(flush);
  outbox.push(message);
  if (transfer) transfers.push(...transfer);
};

// The agents' weight (agent-weight.ts): id -> { pid, nice } of each child started and not yet exited.
const NICE_BY_RUNNING = ${JSON.stringify(AGENT_NICE_TABLE)};
const MAX_NICE = ${MAX_NICE};
const running = new Map();
const niceFor = (count) => (count < NICE_BY_RUNNING.length ? NICE_BY_RUNNING[count] : MAX_NICE);
let autogroup;
function sharedBySession() {
  if (autogroup === undefined) {
    try {
      autogroup = readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
    } catch {
      autogroup = false;
    }
  }
  return autogroup;
}
// Best effort: a child that has just exited, or a kernel that refuses, keeps the weight it has.
// Only a child leading its own session is re-weighed: another's session is the hub's own.
function reweigh() {
  const nice = niceFor(running.size);
  for (const agent of running.values()) {
    if (!agent.ownSession || agent.nice === nice) continue;
    agent.nice = nice;
    try {
      writeFileSync('/proc/' + agent.pid + '/autogroup', String(nice));
    } catch {}
  }
}
function weigh(id, pid, ownSession) {
  running.set(id, { pid, nice: 0, ownSession });
  if (ownSession && sharedBySession()) return reweigh();
  if (process.platform === 'win32') return;
  try {
    setPriority(pid, niceFor(running.size));
  } catch {}
}
function unweigh(id) {
  if (running.delete(id) && autogroup) reweigh();
}

function failure(error) {
  const out = { message: String((error && error.message) || error) };
  for (const key of ['code', 'errno', 'syscall', 'path']) if (error && error[key] !== undefined) out[key] = error[key];
  return out;
}

// An ArrayBuffer this chunk alone owns: transferred as is when it spans its whole buffer, else copied.
function ownBuffer(chunk) {
  const whole = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && !(chunk.buffer instanceof SharedArrayBuffer);
  return whole ? chunk.buffer : chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength);
}

function forward(id, fd, stream) {
  const flow = { stream, unacked: 0, paused: false };
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    post({ t: 'end', id, fd });
  };
  stream.on('data', (chunk) => {
    const buffer = ownBuffer(chunk);
    flow.unacked += buffer.byteLength;
    post({ t: 'data', id, fd, chunk: buffer }, [buffer]);
    if (flow.unacked >= WINDOW && !flow.paused) {
      flow.paused = true;
      stream.pause();
    }
  });
  stream.on('end', end);
  stream.on('close', end);
  stream.on('error', () => {});
  return flow;
}

function ack(flow, bytes) {
  flow.unacked -= bytes;
  if (flow.paused && flow.unacked < WINDOW) {
    flow.paused = false;
    flow.stream.resume();
  }
}

function start(request) {
  const { id } = request;
  let child;
  try {
    child = spawn(request.file, request.args, {
      cwd: request.cwd,
      env: request.env,
      stdio: [request.spare ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: request.detached,
      windowsHide: true,
    });
  } catch (error) {
    post({ t: 'failed', id, error: failure(error) });
    return;
  }
  if (child.pid === undefined) {
    child.once('error', (error) => post({ t: 'failed', id, error: failure(error) }));
    child.stdout.destroy();
    child.stderr.destroy();
    return;
  }
  if (request.cpu !== 'full' && !request.spare) weigh(id, child.pid, request.detached);
  post({ t: 'spawned', id, pid: child.pid });
  const weighLater = request.spare && request.cpu !== 'full' ? { pid: child.pid, ownSession: request.detached } : undefined;
  children.set(id, { 1: forward(id, 1, child.stdout), 2: forward(id, 2, child.stderr), stdin: child.stdin, weighLater });
  // A spare that died has a closed pipe: the write fails with EPIPE, and its exit says the rest.
  if (child.stdin) child.stdin.on('error', () => {});
  child.on('error', () => {});
  child.once('exit', (code, signal) => {
    const entry = children.get(id);
    if (entry) entry.exited = true;
    unweigh(id);
    post({ t: 'exit', id, code, signal });
  });
  child.once('close', () => {
    children.delete(id);
    post({ t: 'closed', id });
  });
}

function handOff(message) {
  const entry = children.get(message.id);
  if (!entry || !entry.stdin) return;
  entry.stdin.end(message.line);
  entry.stdin = undefined;
  if (entry.weighLater && !entry.exited) weigh(message.id, entry.weighLater.pid, entry.weighLater.ownSession);
}

function receive(message) {
  if (message.t === 'spawn') return start(message);
  if (message.t === 'handoff') return handOff(message);
  const flow = children.get(message.id)?.[message.fd];
  if (!flow) return;
  if (message.t === 'ack') ack(flow, message.bytes);
  else if (message.t === 'destroy') flow.stream.destroy();
}

// The hub batches too: each message is an array of ToThread, in order.
parentPort.on('message', (batch) => {
  for (const message of batch) receive(message);
});
`;
