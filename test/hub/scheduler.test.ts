/**
 * The hub's scheduler over a real broker and real sub-agent processes, with an injected clock:
 * fires run and are recorded with their task ids, an overlap skip is recorded with its reason, a
 * hub down across fire times gives one catch-up run after the restart, the run policy judges
 * a schedule's command as the `schedule` door when it is created, a `worktree` schedule's fire is a
 * coding task in a fresh worktree with a reviewable change, and a per-day cap skips fires
 * `budget_spent` once the runs of the last 24 h reported that much usage.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { RunPolicy } from '../../src/broker/run-policy.js';
import { HubScheduler } from '../../src/hub/scheduler.js';
import { ScheduleStore, type FireRecord } from '../../src/schedules/index.js';
import type { BrokerOptions } from '../../src/broker/index.js';
import { fixture, makeBroker, tempDir, waitFor } from '../helpers/core.js';
import { checkoutHash, makeRepo } from '../helpers/git-repo.js';

const T0 = Date.parse('2026-12-05T09:00:00Z');
const dirs: string[] = [];
const schedulers: HubScheduler[] = [];
afterEach(() => {
  for (const s of schedulers.splice(0)) s.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const ALLOW_FIXTURES = new RunPolicy([
  { name: 'quick', command: fixture('quick.mjs') },
  { name: 'sleeper', command: fixture('sleeper.mjs') },
  { name: 'spender', command: fixture('spender.mjs') },
  { name: 'note-taker', command: fixture('note-taker.mjs') },
]);

function setup(dataDir = mkdtempSync(join(tmpdir(), 'bc-sched-hub-')), brokerOptions: BrokerOptions = {}) {
  dirs.push(dataDir);
  const { broker } = makeBroker(brokerOptions);
  const clock = { now: T0 };
  const skipped: FireRecord[] = [];
  const open = () => {
    const store = new ScheduleStore(dataDir);
    const scheduler = new HubScheduler({
      store,
      submit: (spec) => broker.submit(spec),
      runPolicy: ALLOW_FIXTURES,
      logger: silentLogger,
      now: () => clock.now,
      tickMs: 0,
      onSkipped: (record) => skipped.push(record),
      usageOf: (id) => broker.get(id)?.usage,
    });
    schedulers.push(scheduler);
    return { store, scheduler };
  };
  return { broker, clock, skipped, open, dataDir };
}

test('an --every 2s schedule runs and records three fires, each naming its task, which really ran', async () => {
  const { broker, clock, open } = setup();
  const { store, scheduler } = open();
  scheduler.add({ name: 'every2', everyMs: 2000, command: [fixture('quick.mjs')] });
  scheduler.start();
  for (let i = 1; i <= 3; i++) {
    clock.now = T0 + i * 2000 + 10;
    scheduler.tick();
    await waitFor(() => scheduler.activeRuns('every2') === 0, `fire ${i} to end`);
  }
  const fires = store.history('every2');
  expect(fires.map((f) => [f.at - T0, f.outcome])).toEqual([
    [2000, 'ran'],
    [4000, 'ran'],
    [6000, 'ran'],
  ]);
  for (const fire of fires) {
    const task = broker.get(fire.taskId!);
    expect(task?.state).toBe('succeeded');
    expect(task?.label).toBe('schedule every2');
  }
});

test('a fire while the last run is still active is skipped with the reason overlap, and webhooks are told', async () => {
  const { broker, clock, skipped, open } = setup();
  const { store, scheduler } = open();
  scheduler.add({ name: 'slow', everyMs: 60_000, command: [fixture('sleeper.mjs')] });
  scheduler.start();
  clock.now = T0 + 60_000;
  scheduler.tick();
  const [first] = store.history('slow');
  await waitFor(() => broker.get(first!.taskId!)?.state === 'running', 'the first run to start');
  clock.now = T0 + 120_000;
  scheduler.tick();
  expect(store.history('slow').map((f) => (f.outcome === 'ran' ? 'ran' : f.reason))).toEqual(['ran', 'overlap']);
  expect(skipped).toMatchObject([{ schedule: 'slow', at: T0 + 120_000, outcome: 'skipped', reason: 'overlap' }]);
  broker.cancel(first!.taskId!);
  await waitFor(() => scheduler.activeRuns('slow') === 0, 'the run to end');
});

test('a hub stopped across fire times gives one catch-up run after the restart, and records the misses', async () => {
  const { broker, clock, open, dataDir } = setup();
  const before = open();
  before.scheduler.add({ name: 'nightly', everyMs: 60_000, command: [fixture('quick.mjs')] });
  before.scheduler.start();
  clock.now = T0 + 60_000;
  before.scheduler.tick();
  await waitFor(() => before.scheduler.activeRuns('nightly') === 0, 'the first run to end');
  before.scheduler.stop();

  clock.now = T0 + 4 * 60_000 + 30_000; // down across 2m, 3m and 4m
  const after = open();
  expect(after.store.dir).toBe(join(dataDir, 'schedules'));
  after.scheduler.start();
  const fires = after.store.history('nightly');
  expect(
    fires.map(({ at, until, count, outcome, reason, catchUp }) => ({
      at: at - T0,
      until: until && until - T0,
      count,
      outcome,
      reason,
      catchUp,
    })),
  ).toEqual([
    { at: 60_000, until: undefined, count: undefined, outcome: 'ran', reason: undefined, catchUp: undefined },
    { at: 120_000, until: 180_000, count: 2, outcome: 'skipped', reason: 'hub_down', catchUp: undefined },
    { at: 240_000, until: undefined, count: undefined, outcome: 'ran', reason: undefined, catchUp: true },
  ]);
  await waitFor(() => broker.get(fires[2]!.taskId!)?.state === 'succeeded', 'the catch-up run to succeed');
  after.scheduler.tick();
  expect(after.store.history('nightly')).toHaveLength(3); // nothing is fired twice
});

test('a command the run policy refuses from the schedule door cannot be scheduled', () => {
  const { open } = setup();
  const { store, scheduler } = open();
  expect(() => scheduler.add({ name: 'evil', everyMs: 60_000, command: ['/bin/sh', '-c', 'echo pwned'] })).toThrow(
    /refused `\/bin\/sh -c echo pwned` .*from a schedule: not a template, a preset or a command the run policy allows/,
  );
  expect(store.get('evil')).toBeUndefined();
  expect(() => scheduler.add({ name: 'bad', everyMs: 10, command: [fixture('quick.mjs')] })).toThrow(
    'invalid schedule: Expected `everyMs` to be an integer of at least 1000, got `10` (number)',
  );
});

test('a fire whose command the broker refuses (the policy changed since) is recorded as refused, once', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bc-sched-hub-'));
  dirs.push(dataDir);
  // The broker now allows only quick.mjs from the schedule door; the schedule was made when sleeper.mjs was allowed.
  const { broker } = makeBroker({ runPolicy: new RunPolicy([{ name: 'quick', command: fixture('quick.mjs') }]) });
  const clock = { now: T0 };
  const store = new ScheduleStore(dataDir);
  const scheduler = new HubScheduler({
    store,
    submit: (spec) => broker.submit(spec),
    runPolicy: ALLOW_FIXTURES,
    logger: silentLogger,
    now: () => clock.now,
    tickMs: 0,
  });
  schedulers.push(scheduler);
  scheduler.add({ name: 'changed', everyMs: 60_000, command: [fixture('sleeper.mjs')] });
  scheduler.start();
  clock.now = T0 + 60_000;
  scheduler.tick();
  scheduler.tick();
  expect(store.history('changed')).toMatchObject([{ at: T0 + 60_000, outcome: 'skipped', reason: 'refused' }]);
  expect(broker.tasks()).toHaveLength(0);
});

test('buffer-one keeps a fire that came during a run and starts it when the run ends; a further one is skipped', async () => {
  const { broker, clock, open } = setup();
  const { store, scheduler } = open();
  scheduler.add({ name: 'buffered', everyMs: 60_000, overlap: 'buffer-one', command: [fixture('sleeper.mjs')] });
  scheduler.start();
  clock.now = T0 + 60_000;
  scheduler.tick();
  const [first] = store.history('buffered');
  await waitFor(() => broker.get(first!.taskId!)?.state === 'running', 'the first run to start');
  clock.now = T0 + 120_000;
  scheduler.tick();
  clock.now = T0 + 180_000;
  scheduler.tick();
  expect(store.history('buffered').map((f) => [f.at - T0, f.outcome, f.reason])).toEqual([
    [60_000, 'ran', undefined],
    [120_000, 'buffered', undefined],
    [180_000, 'skipped', 'overlap'],
  ]);
  broker.cancel(first!.taskId!);
  const started = await waitFor(
    () => store.history('buffered').find((f) => f.at === T0 + 120_000 && f.outcome === 'ran'),
    'the buffered fire to run',
  );
  await waitFor(() => broker.get(started.taskId!)?.state === 'running', 'the buffered run to start');
  broker.cancel(started.taskId!);
  await waitFor(() => scheduler.activeRuns('buffered') === 0, 'the runs to end');
});

test('a worktree schedule runs each fire as a coding task in a fresh worktree, its change reviewable, the checkout untouched', async () => {
  const repo = makeRepo();
  const worktreeDir = join(tempDir('bc-sched-wt-'), 'worktrees');
  const { broker, clock, open } = setup(undefined, { worktreeDir });
  const { store, scheduler } = open();
  const before = checkoutHash(repo);
  scheduler.add({ name: 'notes', everyMs: 60_000, worktree: repo, command: [fixture('note-taker.mjs')] });
  scheduler.start();
  for (const minute of [1, 2]) {
    clock.now = T0 + minute * 60_000 + 10;
    void scheduler.tick();
    await waitFor(() => scheduler.activeRuns('notes') === 0, `fire ${minute} to end`);
  }
  const fires = store.history('notes');
  expect(fires.map((f) => f.outcome)).toEqual(['ran', 'ran']);
  const trees = new Set<string>();
  for (const fire of fires) {
    const task = broker.get(fire.taskId!)!;
    expect(task.state).toBe('succeeded');
    expect((task.result?.data as { cwd: string }).cwd.startsWith(worktreeDir)).toBe(true);
    expect(task.change).toMatchObject({ repo, files: [{ path: 'NOTES.md', status: 'added', insertions: 1, deletions: 0 }] });
    const { diff } = await broker.coding.change(fire.taskId!);
    expect(diff).toContain(`+note by ${fire.taskId}`);
    trees.add(task.worktree!.worktree);
  }
  expect(trees.size).toBe(2); // each fire had a worktree of its own
  expect(checkoutHash(repo)).toBe(before);
});

test('a worktree schedule needs an absolute path to a git repository, and its cwd inside it', () => {
  const repo = makeRepo();
  const notRepo = tempDir('bc-sched-norepo-');
  const { open } = setup();
  const { store, scheduler } = open();
  const add = (fields: Record<string, unknown>) => () =>
    scheduler.add({ name: 'wt', everyMs: 60_000, command: [fixture('note-taker.mjs')], ...fields });
  expect(add({ worktree: 'some/repo' })).toThrow('invalid schedule: worktree: some/repo is not an absolute path');
  expect(add({ worktree: notRepo })).toThrow(`${notRepo} is not in a git repository; a worktree needs one`);
  expect(add({ worktree: repo, cwd: notRepo })).toThrow(
    `invalid schedule: cwd: ${notRepo} is not inside the worktree's repository ${repo}`,
  );
  expect(store.get('wt')).toBeUndefined();
  expect(add({ worktree: repo, cwd: join(repo, 'src') })).not.toThrow();
});

test('a per-day token cap skips fires budget_spent once the last 24 h of runs reported that much, and webhooks are told', async () => {
  const { broker, clock, skipped, open } = setup();
  const { store, scheduler } = open();
  const HOUR = 3_600_000;
  // spender.mjs reports 50 tokens a step over 10 steps: 500 tokens a run, over the cap of 400.
  scheduler.add({ name: 'capped', everyMs: 12 * HOUR, maxTokensPerDay: 400, command: [fixture('spender.mjs')] });
  scheduler.start();
  clock.now = T0 + 12 * HOUR;
  void scheduler.tick();
  const [first] = store.history('capped');
  await waitFor(() => broker.get(first!.taskId!)?.state === 'succeeded', 'the first run to succeed');
  expect(broker.get(first!.taskId!)?.usage).toMatchObject({ input: 300, output: 200 });
  await waitFor(() => scheduler.activeRuns('capped') === 0, 'the first run to end');

  clock.now = T0 + 24 * HOUR; // the first run started 12 h ago: still inside the day
  void scheduler.tick();
  expect(store.history('capped').slice(1)).toMatchObject([{ at: T0 + 24 * HOUR, outcome: 'skipped', reason: 'budget_spent' }]);
  expect(skipped).toMatchObject([{ schedule: 'capped', at: T0 + 24 * HOUR, reason: 'budget_spent' }]);

  clock.now = T0 + 36 * HOUR; // the first run started 24 h ago: out of the day, the budget is back
  void scheduler.tick();
  const third = store.history('capped')[2]!;
  expect(third).toMatchObject({ at: T0 + 36 * HOUR, outcome: 'ran' });
  await waitFor(() => broker.get(third.taskId!)?.state === 'succeeded', 'the third run to succeed');
  await waitFor(() => scheduler.activeRuns('capped') === 0, 'the third run to end');
  expect(skipped).toHaveLength(1);
});

test('a run of skips is one record and one webhook (Y28): a paused 1 s schedule over 30 fires, across a stop', () => {
  const { clock, skipped, open, dataDir } = setup();
  const first = open();
  first.scheduler.add({ name: 'fast', everyMs: 1000, paused: true, command: [fixture('quick.mjs')] });
  first.scheduler.start();
  for (let i = 1; i <= 30; i++) {
    clock.now = T0 + i * 1000;
    void first.scheduler.tick();
  }
  expect(first.store.history('fast')).toMatchObject([
    { at: T0 + 1000, until: T0 + 30_000, count: 30, outcome: 'skipped', reason: 'paused' },
  ]);
  expect(skipped).toHaveLength(1);
  const lines = () =>
    readFileSync(join(dataDir, 'schedules', 'fires.jsonl'), 'utf8')
      .trim()
      .split('\n').length;
  expect(lines()).toBe(1);
  first.scheduler.stop();
  expect(lines()).toBe(2);
  // The next hub reads the run whole and goes on from its end.
  const second = open();
  expect(second.store.history('fast')).toMatchObject([{ at: T0 + 1000, until: T0 + 30_000, count: 30 }]);
  second.scheduler.start();
  clock.now = T0 + 31_000;
  void second.scheduler.tick();
  expect(second.store.history('fast')).toHaveLength(1);
  expect(second.store.history('fast')[0]).toMatchObject({ until: T0 + 31_000, count: 31 });
  expect(skipped).toHaveLength(1);
});

test('a per-day cap counts every run of the day after fire records are trimmed (Y27)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bc-sched-cap-'));
  dirs.push(dataDir);
  const { broker } = makeBroker();
  const clock = { now: T0 };
  const store = new ScheduleStore(dataDir, { firesKept: 4 });
  let submitted = 0;
  const logged: string[] = [];
  const scheduler = new HubScheduler({
    store,
    submit: (spec) => {
      submitted += 1;
      return broker.submit(spec);
    },
    runPolicy: ALLOW_FIXTURES,
    logger: { ...silentLogger, info: (line: unknown) => logged.push(String(line)) },
    now: () => clock.now,
    tickMs: 0,
    // Each run reported 10 tokens: ten runs reach the cap of 100.
    usageOf: (id) => (broker.get(id) ? { input: 10, output: 0 } : undefined),
  });
  schedulers.push(scheduler);
  scheduler.add({ name: 'capped', everyMs: 1000, overlap: 'allow', maxTokensPerDay: 100, command: [fixture('quick.mjs')] });
  scheduler.start();
  for (let i = 1; i <= 40; i++) {
    clock.now = T0 + i * 1000;
    void scheduler.tick();
  }
  // Only 4 records are kept per schedule, yet the day's 10 runs are: the cap holds.
  expect(submitted).toBe(10);
  expect(store.history('capped').filter((r) => r.outcome === 'ran')).toHaveLength(10);
  // The cap is logged once when reached, not at each of the 30 skipped fires, and they are one record.
  expect(logged.filter((line) => line.includes('skipped budget_spent'))).toHaveLength(1);
  expect(store.history('capped').filter((r) => r.outcome === 'skipped')).toMatchObject([{ reason: 'budget_spent', count: 30 }]);
  await waitFor(() => scheduler.activeRuns('capped') === 0, 'the runs to end');
});

test('a schedule made through a door carries that door’s budget (Y18); one from the owner’s terminal runs as the owner’s', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bc-sched-door-'));
  dirs.push(dataDir);
  const budgets = { mcp: { maxTokens: 100 } };
  const { broker } = makeBroker({ budgets });
  const clock = { now: T0 };
  // No rule for the `schedule` door but the spender: the owner's own may run anything.
  const scheduler = new HubScheduler({
    store: new ScheduleStore(dataDir),
    submit: (spec) => broker.submit(spec),
    runPolicy: new RunPolicy([{ name: 'spender', command: fixture('spender.mjs') }]),
    logger: silentLogger,
    now: () => clock.now,
    tickMs: 0,
    budgets,
  });
  schedulers.push(scheduler);
  scheduler.add({ name: 'by-model', everyMs: 60_000, origin: 'mcp', command: [fixture('spender.mjs')] });
  scheduler.add({ name: 'mine', everyMs: 60_000, origin: 'cli', command: [fixture('quick.mjs')] });
  expect(() => scheduler.add({ name: 'theirs', everyMs: 60_000, origin: 'panel', command: [fixture('quick.mjs')] })).toThrow(
    /refused .*from a schedule/,
  );
  scheduler.start();
  clock.now = T0 + 60_000;
  void scheduler.tick();
  const byModel = scheduler.history('by-model')[0]!;
  const mine = scheduler.history('mine')[0]!;
  expect([byModel.outcome, mine.outcome]).toEqual(['ran', 'ran']);
  const spent = await waitFor(() => {
    const task = broker.get(byModel.taskId!);
    return task?.state !== 'running' && task?.state !== 'queued' && task;
  }, 'the model’s schedule run to end');
  expect(spent).toMatchObject({ state: 'failed', reason: 'budget_exceeded' });
  await waitFor(() => broker.get(mine.taskId!)?.state === 'succeeded', 'the owner’s schedule run to succeed');
  await waitFor(() => scheduler.activeRuns('by-model') + scheduler.activeRuns('mine') === 0, 'the runs to end');
});
