/**
 * A hub for the benchmarks: `backchannel serve` in its own process (its RSS and CPU are the hub's
 * alone) over a given data directory, its control endpoint in that directory. Used by every module
 * that measures the hub path.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { REPO_DIR } from './env.js';

export const CLI = path.join(REPO_DIR, 'bin', 'backchannel.js');

/**
 * The environment of a hub in the scratch directory `dir` whose run policy lets every door run
 * `node <agent>` (docs/run-policy.md): its config file (0600), state, and control socket.
 */
export function hubEnvAllowing(dir, agent) {
  const config = path.join(dir, 'config.yaml');
  writeFileSync(
    config,
    `run_policy:\n  allow:\n    - { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(agent)}] }\n`,
    { mode: 0o600 },
  );
  return {
    ...process.env,
    BACKCHANNEL_CONFIG: config,
    XDG_STATE_HOME: path.join(dir, 'state'),
    BACKCHANNEL_CONTROL: path.join(dir, 'control.sock'),
  };
}

/**
 * Starts `backchannel serve --port 0 --data-dir <dataDir> [...args]` with `env` (and `nodeFlags` for
 * the hub's own node, not its agents'); resolves once it printed its panel URL (its control endpoint
 * answers by then). `startMs`: spawn → that line. `ownSession`: the hub leads a session of its own,
 * as the app or `serve` in a terminal of its own does (with Linux autogroup, the CPU is shared
 * between sessions: else the hub shares this process's).
 */
export async function startServe(dataDir, env = process.env, args = [], nodeFlags = [], { ownSession = false } = {}) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, CLI, 'serve', '--port', '0', '--data-dir', dataDir, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: ownSession,
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /Backchannel panel: (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  const startMs = performance.now() - t0;
  child.stdout.resume();
  const parsed = new URL(url);
  const token = parsed.searchParams.get('token');
  return {
    url,
    pid: child.pid,
    startMs,
    /** The control endpoint: BACKCHANNEL_CONTROL when set, else derived from the data directory. */
    control: env.BACKCHANNEL_CONTROL || path.join(dataDir, 'control.sock'),
    rssMb: () => procStatusMb(child.pid, 'VmRSS'),
    peakMb: () => procStatusMb(child.pid, 'VmHWM'),
    /** CPU (user + system) of the hub's process so far, in ms. */
    cpuMs: () => procCpuMs(child.pid),
    api: (method, route, body) => apiCall(parsed.origin, token, method, route, body),
    async stop() {
      child.kill('SIGINT');
      await exited;
    },
  };
}

function procStatusMb(pid, field) {
  const match = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match[1]) / 1024;
}

const TICKS_PER_SECOND = 100;

function procCpuMs(pid) {
  // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

function apiCall(origin, token, method, route, body) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      origin + route,
      {
        method,
        agent: false,
        headers: { 'x-backchannel-token': token, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode >= 400) reject(new Error(`${method} ${route} → ${res.statusCode} ${text.slice(0, 200)}`));
          else resolve(text);
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** One CLI process, spawn → exit, stdout read to its end. Rejects on a non-zero exit. */
export function runCli(args, env) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    let stderr = '';
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      if (code !== 0) return reject(new Error(`backchannel ${args.join(' ')} exited with ${code}: ${stderr.slice(-500)}`));
      resolve({ ms, stdout: Buffer.concat(chunks) });
    });
  });
}
