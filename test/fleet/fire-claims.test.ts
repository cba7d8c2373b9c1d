/**
 * Two hubs on one Redis sharing a schedule (real redis-server, a real fleet worker, two brokers whose
 * runs go to the queue, an injected clock): each fire runs once, over several fires, whichever hub
 * ticks first; the other hub records it `elsewhere`, naming the hub that ran it. When the owner
 * stops, the other hub takes the schedule over once the owner's claims are older than the takeover
 * time, and the stopped hub, back, catches up nothing another hub already decided. A hub whose fire
 * times differ (an --every schedule added later) runs none beside the owner. The claim script step
 * by step. Two `serve` hubs on the real clock do the same. While Redis is away a fleet hub fires
 * nothing, and its claims close without waiting for it. A worktree schedule is refused on a fleet.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { RunPolicy } from '../../src/broker/run-policy.js';
import { AllowList, FleetWorker, redisFireClaims, redisQueue, type FireClaims } from '../../src/fleet/index.js';
import { HubScheduler } from '../../src/hub/scheduler.js';
import { parseSchedule, ScheduleStore, type FireRecord } from '../../src/schedules/index.js';
import { createTestBroker, fixture, tempDir, waitFor, type TestBroker } from '../helpers/core.js';
import { makeRepo } from '../helpers/git-repo.js';
import { startTestHeadless, type TestHeadless } from '../helpers/panel.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';

const T0 = Date.parse('2026-12-05T09:00:00Z');
const MIN = 60_000;
/** Real time (the owner's heartbeat is Redis's clock): short, so the takeover is waited for briefly. */
const TAKEOVER_MS = 1500;
const QUICK = fixture('quick.mjs');
const ALLOW = new RunPolicy([{ name: 'quick', command: QUICK }]);

describe.skipIf(REDIS_MISSING)(`schedules on a fleet${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  let worker: FleetWorker;
  let queue: string;
  // The worker outlives each test: its endpoint directory is removed after the suite, not after a test.
  const workerDir = mkdtempSync(path.join(os.tmpdir(), 'bc-w-'));
  const brokers: TestBroker[] = [];
  const claims: FireClaims[] = [];
  const schedulers: HubScheduler[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    queue = `q-${randomUUID().slice(0, 8)}`;
    worker = new FleetWorker({
      redis: redis.url,
      name: queue,
      workerName: `${queue}-w1`,
      allow: new AllowList([{ argv: [QUICK] }]),
      ipcDir: path.join(workerDir, 'ipc'),
      concurrency: 4,
    });
    await worker.start();
  });
  afterAll(async () => {
    for (const scheduler of schedulers) scheduler.stop();
    await Promise.all(claims.map((c) => c.close()));
    await Promise.all(brokers.map((b) => b.close()));
    await worker?.close(true);
    await redis?.stop();
    rmSync(workerDir, { recursive: true, force: true });
  }, 120_000);

  const clock = { now: T0 };

  /** A hub: its own data directory, a broker whose runs go to the fleet's queue, fire claims on the fleet's Redis. */
  function hub(name: string, dataDir = tempDir(`bc-sched-${name}-`), takeoverMs = TAKEOVER_MS) {
    const testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    brokers.push(testBroker);
    const claim = redisFireClaims({ redis: redis.url, name: queue, hub: name, takeoverMs });
    claims.push(claim);
    const store = new ScheduleStore(dataDir);
    const skipped: FireRecord[] = [];
    const scheduler = new HubScheduler({
      store,
      submit: (spec) => testBroker.broker.submit(spec),
      runPolicy: ALLOW,
      logger: silentLogger,
      now: () => clock.now,
      tickMs: 0,
      claims: claim,
      onSkipped: (record) => skipped.push(record),
    });
    schedulers.push(scheduler);
    return { name, broker: testBroker.broker, store, scheduler, dataDir, skipped };
  }
  type Hub = ReturnType<typeof hub>;

  const SCHEDULE = { name: 'shared', everyMs: MIN, createdAt: T0, command: [QUICK] };
  const outcomes = (h: Hub) => h.store.history('shared').map((f) => [(f.at - T0) / MIN, f.outcome, f.hub ?? h.name]);

  async function runsEnded(hubs: Hub[], schedule = 'shared'): Promise<void> {
    for (const h of hubs) await waitFor(() => h.scheduler.activeRuns(schedule) === 0, `${h.name}'s runs to end`, 30_000);
  }

  test('two hubs with one schedule run each fire once, whichever ticks first; the other records it elsewhere', async () => {
    const a = hub('hub-a');
    const b = hub('hub-b');
    a.scheduler.add(SCHEDULE);
    b.scheduler.add(SCHEDULE);
    a.scheduler.start();
    b.scheduler.start();
    for (let minute = 1; minute <= 4; minute++) {
      clock.now = T0 + minute * MIN + 10;
      // Both at once, then each alone in turn: a hub that asked while the owner might still claim asks again.
      await Promise.all([a.scheduler.tick(), b.scheduler.tick()]);
      const [first, second] = minute % 2 === 0 ? [a, b] : [b, a];
      await first.scheduler.tick();
      await second.scheduler.tick();
      await runsEnded([a, b]);
    }
    const ran = [...a.store.history('shared'), ...b.store.history('shared')].filter((f) => f.outcome === 'ran');
    expect(ran.map((f) => (f.at - T0) / MIN).sort()).toEqual([1, 2, 3, 4]);
    // Each fire: one hub ran it, the other recorded it elsewhere, naming that hub.
    for (const minute of [1, 2, 3, 4]) {
      const [ranBy, other] = a.store.history('shared').find((f) => f.at === T0 + minute * MIN)?.outcome === 'ran' ? [a, b] : [b, a];
      expect(outcomes(ranBy).find(([m]) => m === minute)).toEqual([minute, 'ran', ranBy.name]);
      expect(outcomes(other).find(([m]) => m === minute)).toEqual([minute, 'elsewhere', ranBy.name]);
      const task = ranBy.broker.get(ran.find((f) => f.at === T0 + minute * MIN)!.taskId!);
      expect(task?.state).toBe('succeeded');
      expect(task?.worker).toBe(`${queue}-w1`); // the run went to the fleet's queue
    }
    expect(a.broker.tasks().length + b.broker.tasks().length).toBe(4);
    expect([...a.skipped, ...b.skipped]).toEqual([]);

    // The owner (who ran the last fire) stops. The other hub takes over once the owner's claims are TAKEOVER_MS old.
    const [owner, other] = a.store.history('shared')[3]!.outcome === 'ran' ? [a, b] : [b, a];
    owner.scheduler.stop();
    clock.now = T0 + 5 * MIN + 10;
    const taken = await waitFor(
      async () => {
        await other.scheduler.tick();
        return other.store.history('shared').find((f) => f.at === T0 + 5 * MIN);
      },
      'the other hub to take the schedule over',
      30_000,
      100,
    );
    expect(taken).toMatchObject({ outcome: 'ran' });
    await waitFor(() => other.broker.get(taken.taskId!)?.state === 'succeeded', 'the taken-over fire to succeed', 30_000);

    // The old owner comes back (a new hub id): the fire it missed was run elsewhere, so it catches up nothing.
    const back = hub('hub-back', owner.dataDir);
    back.scheduler.start();
    await back.scheduler.tick();
    expect(back.store.history('shared').slice(4)).toMatchObject([{ at: T0 + 5 * MIN, outcome: 'elsewhere', hub: other.name }]);
    expect(back.broker.tasks()).toHaveLength(0);
    await runsEnded([other]);
  }, 120_000);

  test('a hub whose --every times differ (added at another moment) never runs beside the owner: its fires wait, then are elsewhere', async () => {
    // Takeover only after a minute of silence: no hub goes silent here.
    const a = hub('hub-early', undefined, 60_000);
    const b = hub('hub-late', undefined, 60_000);
    clock.now = T0;
    a.scheduler.add({ ...SCHEDULE, name: 'anchors' });
    b.scheduler.add({ ...SCHEDULE, name: 'anchors', createdAt: T0 + 20_000 });
    // The early hub claims first (its first round done), so it owns the schedule.
    a.scheduler.start();
    await a.scheduler.tick();
    b.scheduler.start();
    // The late hub ticks first each time, past its own fire time and past the early hub's.
    for (const at of [1, 2, 3, 4].flatMap((m) => [m * MIN + 10, m * MIN + 20_010, m * MIN + 50_000])) {
      clock.now = T0 + at;
      await b.scheduler.tick();
      await a.scheduler.tick();
      await runsEnded([a, b], 'anchors');
    }
    await b.scheduler.tick();
    const anchors = (h: Hub) => h.store.history('anchors').map((f) => [(f.at - T0) / 1000, f.outcome, f.hub ?? h.name]);
    expect(anchors(a)).toEqual([60, 120, 180, 240].map((s) => [s, 'ran', 'hub-early']));
    // Its fire at 80 s waited while the owner had not decided past it, then was recorded elsewhere; 260 s still waits.
    expect(anchors(b)).toEqual([80, 140, 200].map((s) => [s, 'elsewhere', 'hub-early']));
    expect(b.broker.tasks()).toEqual([]);
  }, 120_000);

  test('the claim script: one owner decides, another hub waits for it, takes over once it is silent, and never wins a decided fire', async () => {
    const opts = { redis: redis.url, name: queue };
    const x = redisFireClaims({ ...opts, hub: 'x', takeoverMs: 60_000 });
    const y = redisFireClaims({ ...opts, hub: 'y', takeoverMs: 60_000 });
    const yImpatient = redisFireClaims({ ...opts, hub: 'y', takeoverMs: 0 });
    claims.push(x, y, yImpatient);
    const span = (at: number, through = at) => ({ at, through });
    const KEEP = 60_000;
    expect(await x.claim('script', [span(100)], KEEP)).toEqual({ owner: '', verdicts: ['won'] });
    expect(await y.claim('script', [span(100), span(200)], KEEP)).toEqual({ owner: 'x', verdicts: ['lost', 'wait'] });
    expect(await x.claim('script', [], KEEP)).toEqual({ owner: 'x', verdicts: [] }); // the owner's heartbeat
    expect(await x.claim('script', [span(100), span(150, 200)], KEEP)).toEqual({ owner: 'x', verdicts: ['won', 'won'] });
    expect(await y.claim('script', [span(200), span(250)], KEEP)).toEqual({ owner: 'x', verdicts: ['lost', 'wait'] });
    // Once x counts as silent (here: y's takeover time is 0), y owns the schedule from the next undecided fire.
    expect(await yImpatient.claim('script', [span(200), span(250)], KEEP)).toEqual({ owner: 'x', verdicts: ['lost', 'won'] });
    expect(await x.claim('script', [span(250), span(300)], KEEP)).toEqual({ owner: 'y', verdicts: ['lost', 'wait'] });
  });

  test('a worktree schedule is refused on a hub whose runs go to a fleet (the worker would not run in the worktree)', () => {
    const h = hub('hub-wt');
    expect(() => h.scheduler.add({ name: 'wt', everyMs: MIN, worktree: makeRepo(), command: [QUICK] })).toThrow(
      'invalid schedule: worktree: this hub runs tasks on a fleet, where a worker does not run in the hub’s worktree',
    );
  });

  test('two `serve` hubs on one fleet with one --every 2s schedule run each of its fires once, on the worker', async () => {
    const EVERY = 2000;
    const createdAt = Date.now() + 500;
    const parsed = parseSchedule({ name: 'served', everyMs: EVERY, command: [QUICK], createdAt });
    if (!parsed.ok) throw new Error(parsed.message);
    const dirs = [tempDir('bc-serve-a-'), tempDir('bc-serve-b-')];
    for (const dir of dirs) new ScheduleStore(path.join(dir, 'data')).put(parsed.schedule);
    const headless: TestHeadless[] = [];
    try {
      for (const dir of dirs)
        headless.push(await startTestHeadless({ dir, runPolicy: ALLOW, control: false, redis: { redis: redis.url, name: queue } }));
      const firesOf = (dir: string) => new ScheduleStore(path.join(dir, 'data')).history('served');
      const FIRES = [1, 2, 3].map((k) => createdAt + k * EVERY);
      // Each hub records each fire: it ran it, or another hub did (`elsewhere`).
      await waitFor(
        () => dirs.every((dir) => FIRES.every((at) => firesOf(dir).some((f) => f.at === at))),
        'both hubs to record three fires',
        60_000,
        100,
      );
      const all = dirs.flatMap((dir, i) => firesOf(dir).map((f) => ({ ...f, hubIndex: i })));
      for (const at of FIRES) {
        const ran = all.filter((f) => f.at === at && f.outcome === 'ran');
        expect(ran, `the fire at +${at - createdAt} ms`).toHaveLength(1);
        expect(all.filter((f) => f.at === at && f.outcome === 'elsewhere')).toHaveLength(1);
        const task = await waitFor(
          () => {
            const snapshot = headless[ran[0]!.hubIndex]!.broker.get(ran[0]!.taskId!);
            return snapshot?.state === 'succeeded' && snapshot;
          },
          'the run to succeed',
          30_000,
        );
        expect(task.worker).toBe(`${queue}-w1`);
      }
      for (const h of headless) h.scheduler!.stop();
      for (const h of headless) await waitFor(() => h.scheduler!.activeRuns('served') === 0, 'the runs to end', 30_000);
    } finally {
      await Promise.all(headless.map((h) => h.stop({ keep: true })));
    }
  }, 120_000);

  test('while its Redis is away a fleet hub fires nothing, and closing its claims does not wait for Redis', async () => {
    const away = await startRedis();
    const claim = redisFireClaims({ redis: away.url, name: queue, hub: 'hub-away' });
    const testBroker = createTestBroker({}, { scope: 'manual' });
    brokers.push(testBroker);
    const store = new ScheduleStore(tempDir('bc-sched-away-'));
    const scheduler = new HubScheduler({
      store,
      submit: (spec) => testBroker.broker.submit(spec),
      runPolicy: ALLOW,
      logger: silentLogger,
      now: () => clock.now,
      tickMs: 0,
      claims: claim,
    });
    schedulers.push(scheduler);
    try {
      clock.now = T0;
      scheduler.add({ ...SCHEDULE, name: 'away' });
      scheduler.start();
      await away.stop();
      clock.now = T0 + MIN + 10;
      // The claim waits for Redis (it is never given up on while the hub runs); closing ends the wait.
      const round = scheduler.tick();
      scheduler.stop();
      const closedAt = Date.now();
      await claim.close();
      expect(Date.now() - closedAt).toBeLessThan(10_000);
      await round;
      // A claim that never came back decides nothing: the fire is neither run nor recorded here.
      expect(store.history('away')).toEqual([]);
      expect(testBroker.broker.tasks()).toEqual([]);
    } finally {
      await away.stop();
    }
  }, 60_000);
});
