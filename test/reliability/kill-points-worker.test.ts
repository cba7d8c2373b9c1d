/**
 * Fault table, issue 47 item 1: the kill-point test for a fleet. A broker sends mixed tasks (small,
 * long — seconds of work —, asking, calling the caller's tool, failing) through a real redis-server
 * to two `backchannel worker` processes; at random points one of them is SIGKILLed and another
 * started in its place. Every task ends as its agent says it ended; none runs more than twice (the
 * dead worker's unfinished work runs again once) or twice at once (its agents die with it); no agent
 * of a dead worker is left running. `npm test` kills 2 workers over 8 tasks; `npm run test:long`
 * (scripts/test-long.mjs) 10 over 40.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { TaskHandle } from '../../src/broker/index.js';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, fixture, settle, tempDir, waitUntilGone, type TestBroker } from '../helpers/core.js';
import { isAlive } from '../helpers/processes.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { startWorker, type WorkerProcess } from '../fleet/workers.js';

const KILLS = positive('BACKCHANNEL_WORKER_KILL_POINTS', 2);
const TASKS = positive('BACKCHANNEL_WORKER_KILL_POINT_TASKS', 8);
const SEED = positive('BACKCHANNEL_KILL_POINT_SEED', 1 + Math.floor(Math.random() * 2 ** 31));
const AGENT = fixture('kill-points/agent.mjs');
const KINDS = ['small', 'long', 'asking', 'tool', 'failing'] as const;
const ECHO = { name: 'Echo', description: 'Echoes its arguments', input_schema: { type: 'object' } };

function positive(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} expects a positive whole number, got "${value}"`);
  return n;
}

/** A small seeded generator (mulberry32): the same seed, the same kill points. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function lines(file: string): string[][] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '));
}

/** Answers the task's questions and tool calls as its caller would. */
function answerAll(broker: TestBroker['broker'], task: TaskHandle): void {
  const answered = new Set<string>();
  task.on('update', () => {
    const { pendingQuestion, pendingToolCalls = [] } = task.snapshot();
    if (pendingQuestion && !answered.has(pendingQuestion.askId)) {
      answered.add(pendingQuestion.askId);
      broker.answer(task.id, pendingQuestion.askId, 'yes');
    }
    for (const call of pendingToolCalls) {
      if (answered.has(call.callId)) continue;
      answered.add(call.callId);
      broker.answerToolCall(task.id, call.callId, { content: call.arguments });
    }
  });
}

describe.skipIf(REDIS_MISSING)(`fleet workers SIGKILLed at random points${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  const workers: WorkerProcess[] = [];
  let testBroker: TestBroker | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await testBroker?.close();
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
  }, 90_000);

  test(
    `${KILLS} worker kills over ${TASKS} mixed tasks: every task ends as its agent did, none runs more than twice or twice at once, no orphan (seed ${SEED})`,
    async () => {
      const next = random(SEED);
      const queue = `q-${randomUUID().slice(0, 8)}`;
      testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
      const { broker } = testBroker;
      const dir = tempDir('bc-kpw-');
      const [runs, ends, ipcDir] = ['runs.txt', 'ends.txt', 'ipc'].map((name) => path.join(dir, name)) as [string, string, string];
      writeFileSync(runs, '');
      writeFileSync(ends, '');
      let started = 0;
      const worker = () =>
        startWorker(redis.url, { queue, name: `${queue}-w${++started}`, allow: [AGENT], ipcDir, concurrency: 3, lockTimeoutMs: 1000 });
      const live = await Promise.all([worker(), worker()]);
      workers.push(...live);
      const tasks: Array<{ task: TaskHandle; nonce: string }> = [];
      const perKill = Math.ceil(TASKS / KILLS);
      const killed: WorkerProcess[] = [];
      for (let round = 0; round < KILLS; round++) {
        for (let n = 0; n < Math.min(perKill, TASKS - tasks.length); n++) {
          const kind = KINDS[Math.floor(next() * KINDS.length)]!;
          const nonce = `r${round}-t${n}-${SEED}`;
          // A long one works 3 to 6 s (twice `ms`): a worker killed meanwhile leaves it unfinished.
          const ms = kind === 'long' ? 1500 + Math.floor(next() * 1500) : Math.floor(next() * 300);
          const input = { nonce, kind, ms, runs, ends };
          const task = broker.submit({ command: AGENT, input, ...(kind === 'tool' ? { tools: [ECHO] } : {}) });
          answerAll(broker, task);
          tasks.push({ task, nonce });
        }
        // A random moment while this round's agents work: from their first start to a few seconds on.
        const first = await new Promise<string>((resolve) => {
          const look = () => {
            const running = tasks.find(({ task }) => task.snapshot().worker && task.snapshot().state === 'running');
            if (running) return resolve(running.task.snapshot().worker!);
            setTimeout(look, 20);
          };
          look();
        });
        await new Promise((resolve) => setTimeout(resolve, Math.floor(next() * 1500)));
        const victim = live.find((w) => w.name === first) ?? live[0]!;
        victim.child.kill('SIGKILL');
        killed.push(victim);
        live.splice(live.indexOf(victim), 1);
        const fresh = await worker();
        live.push(fresh);
        workers.push(fresh);
      }
      await Promise.all(tasks.map(({ task }) => settle(task.result)));

      const found: string[] = [];
      const ran = new Map<string, number>();
      for (const [nonce, pid, note, earlier] of lines(runs)) {
        ran.set(nonce!, (ran.get(nonce!) ?? 0) + 1);
        if (note === 'alongside') found.push(`task ${nonce} ran twice at once (pid ${pid} beside ${earlier})`);
      }
      const endOf = new Map(lines(ends).map(([nonce, , how]) => [nonce!, how!]));
      // A run that succeeded and still ran again: its finished work was thrown away. (A run that
      // failed as its worker died — no input, its question or tool call cut off — runs again.)
      const lastRun = new Map(lines(runs).map(([nonce, pid]) => [nonce!, pid!]));
      for (const [nonce, pid, how] of lines(ends))
        if (how === 'success' && lastRun.get(nonce!) !== pid) found.push(`task ${nonce}: its run (pid ${pid}) succeeded, yet it ran again`);
      for (const { task, nonce } of tasks) {
        const snap = task.snapshot();
        const times = ran.get(nonce) ?? 0;
        const shown = `${snap.state}${snap.message ? ` (${snap.message})` : ''}`;
        if (times > 2) found.push(`task ${nonce} ran ${times} times`);
        const how = endOf.get(nonce);
        if (how === 'success' && snap.state !== 'succeeded') found.push(`task ${nonce}: its agent succeeded, but it is ${shown}`);
        if (how === 'error' && snap.state !== 'failed') found.push(`task ${nonce}: its agent failed, but it is ${shown}`);
        // No run ended: its agents died with their workers (lost twice: crashed, not run a third time).
        const lost = snap.state === 'failed' && snap.reason === 'crashed';
        if (how === undefined && !lost) found.push(`task ${nonce}: no run of its agent ended, and it is ${shown}`);
      }
      expect({ seed: SEED, found }).toEqual({ seed: SEED, found: [] });
      // The dead workers' agents and keepers: gone.
      const pids = lines(runs).map(([, pid]) => Number(pid));
      await waitUntilGone(pids, 10_000);
      expect(killed.length).toBe(KILLS);
      expect(pids.filter(isAlive)).toEqual([]);
    },
    Math.max(180_000, KILLS * 40_000),
  );
});
