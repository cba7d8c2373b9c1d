/**
 * Runs a headless coding CLI (Cursor's `agent`, Claude Code's `claude`) as a child process and hands
 * its stdout to the caller line by line. Shared by the cursor-cli and claude-code templates: this is
 * the one copy, which `backchannel new` vendors into a scaffolded project (template.json `vendor`).
 * Its process-group kill is the template-side twin of the broker's src/broker/process/kill-tree.ts:
 * a sub-agent cannot import Backchannel's internals, only its SDK.
 *
 * Policy:
 * - stdin is ignored (`claude` waits for EOF on an open stdin pipe), unless `stdinText` is given:
 *   then it is written and closed at once (long prompts: argv is limited to ~128 KiB per argument);
 * - with `ownGroup` (the default), the child leads its own process group, so `stop()` reaches the
 *   workers it leaves behind: SIGTERM to the group, then SIGKILL after `killGraceMs`. Without it,
 *   the child stays in this wrapper's group (the broker's group kill then reaches it even if the
 *   wrapper is SIGKILLed) and `stop()` signals the child itself — Claude Code needs its own SIGTERM
 *   to stop the shells it runs in their own sessions;
 * - one streaming UTF-8 decoder per stream, one line buffer per stream, last line flushed at close;
 * - no output at all for `idleTimeoutMs` stops the child (the CLI sometimes goes silent without
 *   exiting, and our own heartbeats would hide that from the broker's stall watchdog), unless
 *   `waiting()` says it waits on someone else (a call to the caller's tools, bridge.mjs);
 * - if this process exits or is terminated, the child's group is killed with it;
 * - a child in a session of its own (`ownGroup`) gets this session's CPU weight (Linux autogroup),
 *   as it is when the child starts: else it would weigh as a whole session again, beside the weight
 *   the broker gives this agent (docs/writing-sub-agents.md, "CPU weight").
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** Grace between SIGTERM and SIGKILL for the CLI's process group. */
export const DEFAULT_KILL_GRACE_MS = 2000;
/** After the child exits, how long to wait for the rest of its output before giving up on the pipes. */
const DRAIN_AFTER_EXIT_MS = 1000;
/** Lines of stderr kept for error messages. */
const STDERR_TAIL_LINES = 20;

/** Prompts over this many bytes go through stdin: one argv string is limited to 128 KiB on Linux (E2BIG). */
export const MAX_ARGV_PROMPT_BYTES = 100 * 1024;

export function promptViaStdin(prompt) {
  return Buffer.byteLength(prompt) > MAX_ARGV_PROMPT_BYTES;
}

/** Environment hand-off variables of *this* task: the CLI must not report to it. */
const HANDOFF_VARIABLES = [
  'CURSOR_TASK_ID',
  'CURSOR_IPC_PATH',
  'CURSOR_IPC_TOKEN',
  'CURSOR_TASK_ATTEMPT',
  'CURSOR_HEARTBEAT_MS',
  'CURSOR_SPOOL_DIR',
  'CURSOR_IPC_DIR',
];

export function childEnvironment(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const name of HANDOFF_VARIABLES) delete env[name];
  return env;
}

/** Replaces API keys (values of *_API_KEY variables, and common key shapes) with `[redacted]`. */
export function redact(text, env = process.env) {
  let out = text;
  for (const [name, value] of Object.entries(env)) {
    if (/(_API_KEY|_TOKEN|_SECRET)$/.test(name) && typeof value === 'string' && value.length >= 8) {
      out = out.split(value).join('[redacted]');
    }
  }
  return out.replace(/\b(sk-[A-Za-z0-9_-]{12,}|key_[A-Za-z0-9]{16,}|crsr_[A-Za-z0-9]{16,})/g, '[redacted]');
}

function splitLines(stream, onLine) {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const emit = (text) => {
    const lines = (pending + text).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  };
  stream.on('data', (chunk) => emit(decoder.write(chunk)));
  return () => {
    emit(decoder.end());
    if (pending !== '') onLine(pending);
    pending = '';
  };
}

/**
 * @param {{
 *   bin: string, args: string[], cwd?: string, env?: NodeJS.ProcessEnv, stdinText?: string, ownGroup?: boolean,
 *   onStdoutLine: (line: string) => void, onStderrLine?: (line: string) => void,
 *   idleTimeoutMs?: number, killGraceMs?: number,
 *   waiting?: () => boolean,   // true while the CLI waits on someone else (a bridged tool call): not idle
 * }} options
 * @returns {{ pid: number | undefined, done: Promise<CliExit>, stop: (why: string) => Promise<void>, readonly stoppedBecause?: string }}
 *
 * @typedef {{ code: number | null, signal: string | null, spawnError?: Error & {code?: string},
 *             stderrTail: string, stoppedBecause?: string }} CliExit
 */
/** Gives the session `pid` leads this process's session nice (Linux autogroup; elsewhere nothing to do). */
function shareSessionWeight(pid) {
  try {
    const nice = /nice (\d+)/.exec(readFileSync('/proc/self/autogroup', 'utf8'))?.[1];
    if (nice !== undefined) writeFileSync(`/proc/${pid}/autogroup`, nice);
  } catch {
    // No autogroup here, or the child has already gone: it keeps the weight it has.
  }
}

export function startCli(options) {
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const stderrTail = [];
  let stoppedBecause;
  let exited = false;
  let idleTimer;

  const ownGroup = options.ownGroup !== false && process.platform !== 'win32';
  const child = spawn(options.bin, options.args, {
    cwd: options.cwd,
    env: options.env ?? childEnvironment(),
    stdio: [options.stdinText === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    detached: ownGroup,
    windowsHide: true,
  });
  if (ownGroup && child.pid !== undefined) shareSessionWeight(child.pid);
  if (options.stdinText !== undefined) {
    child.stdin.on('error', () => {}); // a CLI that exits before reading: its exit says why
    child.stdin.end(options.stdinText);
  }

  const killGroup = (signal) => {
    if (child.pid === undefined) return;
    try {
      if (ownGroup) process.kill(-child.pid, signal);
      else if (!exited) child.kill(signal);
    } catch {
      /* ESRCH: the group is already gone */
    }
  };
  const killOnExit = () => killGroup('SIGKILL');
  const killOnSignal = (signal) => {
    process.removeListener('SIGTERM', killOnSignal);
    const die = () => process.kill(process.pid, signal); // die as we would have without the handler
    if (ownGroup) {
      killGroup('SIGKILL');
      die();
    } else {
      void stop(`${signal} received`).then(die); // the CLI's own SIGTERM handler stops what it started
    }
  };
  process.on('exit', killOnExit);
  if (process.listenerCount('SIGTERM') === 0) process.on('SIGTERM', killOnSignal);

  const armIdle = () => {
    if (!options.idleTimeoutMs) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      if (options.waiting?.()) return armIdle(); // silent because it waits on someone else, not stuck
      void stop(`no output from ${options.bin} for ${Math.round(options.idleTimeoutMs / 1000)} s`);
    }, options.idleTimeoutMs);
  };
  armIdle();

  const flushStdout = splitLines(child.stdout, (line) => {
    armIdle();
    options.onStdoutLine(line);
  });
  const flushStderr = splitLines(child.stderr, (line) => {
    armIdle();
    stderrTail.push(line);
    if (stderrTail.length > STDERR_TAIL_LINES) stderrTail.shift();
    options.onStderrLine?.(line);
  });

  const closed = new Promise((resolve) => child.once('close', resolve));
  const exitPromise = new Promise((resolve) => {
    child.once('error', (error) => {
      exited = true;
      resolve({ code: null, signal: null, spawnError: error });
    });
    child.once('exit', (code, signal) => {
      exited = true;
      resolve({ code, signal });
    });
  });

  const done = exitPromise.then(async (exit) => {
    if (!exit.spawnError) {
      // Let the pipes drain, but don't wait forever: a leftover worker may hold them open.
      let timer;
      await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, DRAIN_AFTER_EXIT_MS)))]);
      clearTimeout(timer);
    }
    clearTimeout(idleTimer);
    flushStdout();
    flushStderr();
    killGroup('SIGKILL'); // workers left behind by the CLI
    child.stdout.destroy();
    child.stderr.destroy();
    process.removeListener('exit', killOnExit);
    process.removeListener('SIGTERM', killOnSignal);
    return { ...exit, stderrTail: redact(stderrTail.join('\n')), stoppedBecause };
  });

  /** Stops the whole group: SIGTERM, then SIGKILL after the grace. Resolves once the child exited. */
  async function stop(why) {
    stoppedBecause ??= why;
    if (exited) {
      killGroup('SIGKILL');
      return;
    }
    killGroup('SIGTERM');
    let timer;
    const graceOver = new Promise((resolve) => (timer = setTimeout(resolve, killGraceMs, 'timeout')));
    const outcome = await Promise.race([exitPromise.then(() => 'exited'), graceOver]);
    clearTimeout(timer);
    if (outcome === 'timeout') killGroup('SIGKILL');
    await exitPromise;
  }

  return {
    pid: child.pid,
    done,
    stop,
    get stoppedBecause() {
      return stoppedBecause;
    },
  };
}
