/** Real `backchannel worker` processes for the fleet tests, each killed after its suite if still running. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { outputOf } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const BIN = path.join(ROOT, 'bin', 'backchannel.js');

export function fleetFixture(name: string): string {
  return path.join(ROOT, 'test/fleet/fixtures', name);
}

export interface WorkerProcess {
  readonly name: string;
  readonly child: ChildProcess;
  output(): string;
  /** SIGTERM (cancels its sub-agents) and waits for the exit. */
  stop(): Promise<void>;
}

export interface StartWorkerOptions {
  queue: string;
  name: string;
  allow: string[];
  /** `--presets <dir>`: the presets that directory holds. */
  presets?: string;
  /** Give the directory as `--templates <dir>`, the deprecated old name of `--presets`. */
  legacyTemplatesFlag?: boolean;
  concurrency?: number;
  lockTimeoutMs?: number;
  ipcDir: string;
}

export async function startWorker(redisUrl: string, options: StartWorkerOptions): Promise<WorkerProcess> {
  const args = [BIN, 'worker', '--redis', redisUrl, '--queue', options.queue, '--name', options.name];
  for (const command of options.allow) args.push('--allow', command);
  if (options.presets) args.push(options.legacyTemplatesFlag ? '--templates' : '--presets', options.presets);
  if (options.concurrency) args.push('--concurrency', String(options.concurrency));
  if (options.lockTimeoutMs) args.push('--lock-timeout', String(options.lockTimeoutMs));
  const child = spawn(process.execPath, args, {
    env: { ...process.env, CURSOR_IPC_DIR: options.ipcDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  // 50 s: a worker is a Node process loading BullMQ, slow to start on a saturated machine.
  await outputOf(child, 'taking tasks from', `worker ${options.name} to start`, 50_000).catch((error: unknown) => {
    // Not left running when it did not start in time.
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    throw error;
  });
  return {
    name: options.name,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', () => resolve(true)));
      child.kill('SIGTERM');
      const late = new Promise((resolve) => setTimeout(() => resolve(false), 20_000).unref());
      if (await Promise.race([exited, late])) return;
      console.warn(`worker ${options.name} did not stop within 20 s of SIGTERM; killing it. Its output:\n${out.slice(-2000)}`);
      child.kill('SIGKILL');
      await exited;
    },
  };
}
