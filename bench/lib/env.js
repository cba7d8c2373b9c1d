/**
 * One environment for the baselines and the broker: every child the benchmarks start (directly or
 * through the broker) inherits this cleaned process.env, so neither side pays for extra start-up work.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Variables that change how fast `node` starts or behaves (NODE_EXTRA_CA_CERTS alone adds ~40 ms). */
const NOISY = [
  'NODE_EXTRA_CA_CERTS',
  'NODE_OPTIONS',
  'NODE_V8_COVERAGE',
  'NODE_DEBUG',
  'NODE_COMPILE_CACHE',
  'NODE_REPL_EXTERNAL_MODULE',
  'BACKCHANNEL_DEBUG',
];

export function cleanEnvironment() {
  for (const name of NOISY) delete process.env[name];
  for (const name of Object.keys(process.env)) if (name.startsWith('CURSOR_')) delete process.env[name];
}

export const BENCH_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const REPO_DIR = path.dirname(BENCH_DIR);

/** Absolute path of a child program in bench/agents. */
export function agentPath(name) {
  return path.join(BENCH_DIR, 'agents', name);
}

/** A private temporary directory, removed at exit. */
export function scratchDir(prefix = 'bcb-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function openFds() {
  return readdirSync('/proc/self/fd').length;
}

export function rssMb() {
  return process.memoryUsage.rss() / 1048576;
}

export function log(...parts) {
  process.stderr.write(`  ${parts.join(' ')}\n`);
}
