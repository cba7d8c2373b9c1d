/**
 * The bridge's schedule calls (src/hub/broker-bridge.ts, `scheduleCalls`), through the client as a
 * front-end meets them — every call checked by the route table and carried through JSON (the
 * in-memory pair) — over a real broker, a real scheduler with an injected clock and real sub-agent
 * processes: the list with next fire, last fire, last run and its state; a schedule's fire history
 * paged newest first; pause, resume, remove and run-now; and the one-line errors of the one table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { RunPolicy } from '../../src/broker/run-policy.js';
import { createInMemoryPair, type InMemoryPair } from '../../src/client/in-memory.js';
import { NO_SCHEDULER } from '../../src/hub/broker-bridge.js';
import { HubScheduler } from '../../src/hub/scheduler.js';
import { BridgeError } from '../../src/model/errors.js';
import { ScheduleStore, type FireRecord } from '../../src/schedules/index.js';
import { fixture, makeBroker, waitFor } from '../helpers/core.js';

const T0 = Date.parse('2026-12-05T09:00:00Z');
const dirs: string[] = [];
const pairs: InMemoryPair[] = [];
const schedulers: HubScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.stop();
  for (const pair of pairs.splice(0)) await pair.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setup() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bc-sched-bridge-'));
  dirs.push(dataDir);
  const { broker } = makeBroker();
  const clock = { now: T0 };
  const store = new ScheduleStore(dataDir);
  const scheduler = new HubScheduler({
    store,
    submit: (spec) => broker.submit(spec),
    runPolicy: new RunPolicy([{ name: 'quick', command: fixture('quick.mjs'), moreArgs: true }]),
    logger: silentLogger,
    now: () => clock.now,
    tickMs: 0,
  });
  schedulers.push(scheduler);
  scheduler.start();
  const presets = [{ name: 'quick', description: 'answers at once', request: { command: fixture('quick.mjs'), args: ['--fast'] } }];
  const pair = createInMemoryPair(broker, { scheduler, presets });
  pairs.push(pair);
  return { broker, clock, store, scheduler, client: pair.client };
}

/** A call's refusal: its code and message (the call must fail). */
async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await call;
  } catch (error) {
    expect(BridgeError.is(error)).toBe(true);
    return { code: (error as BridgeError).code, message: (error as Error).message };
  }
  throw new Error('the call was expected to fail');
}

test('a schedule added through the client lists with its next fire, then its last run and that run state', async () => {
  const { broker, clock, scheduler, client } = setup();
  const added = await client.addSchedule({ name: 'every2', everyMs: 2000, command: [fixture('quick.mjs')] });
  expect(added).toEqual({
    schedule: expect.objectContaining({ name: 'every2', everyMs: 2000, overlap: 'skip', catchUp: 'latest', createdAt: T0, paused: false }),
    nextFireAt: T0 + 2000,
    activeRuns: 0,
  });
  clock.now = T0 + 2010;
  scheduler.tick();
  const [listed] = await client.listSchedules();
  expect(listed).toMatchObject({ nextFireAt: T0 + 4000, lastFire: { at: T0 + 2000, outcome: 'ran' }, lastRun: { at: T0 + 2000 } });
  const taskId = listed!.lastRun!.taskId!;
  expect(broker.get(taskId)?.label).toBe('schedule every2');
  await waitFor(async () => (await client.listSchedules())[0]?.lastRunState === 'succeeded', 'the run to show succeeded');
  await waitFor(async () => (await client.listSchedules())[0]?.activeRuns === 0, 'the run to count as ended');
});

test('a schedule createdAt is the hub clock, whatever the request says', async () => {
  const { client } = setup();
  const added = await client.addSchedule({ name: 'early', everyMs: 60_000, command: [fixture('quick.mjs')], createdAt: 5 } as never);
  expect(added.schedule.createdAt).toBe(T0);
});

test('getSchedule pages the fire history newest first, and the cursor reaches every record once', async () => {
  const { store, client } = setup();
  await client.addSchedule({ name: 'busy', everyMs: 60_000, command: [fixture('quick.mjs')] });
  // Reasons alternate: skips in a row for one reason would be one record (a run of skips).
  const records: FireRecord[] = Array.from({ length: 120 }, (_, i) => ({
    schedule: 'busy',
    at: T0 + i * 60_000,
    outcome: 'skipped',
    reason: i % 2 === 0 ? 'paused' : 'overlap',
    recordedAt: T0 + i * 60_000,
  }));
  store.record(records);
  store.record([{ schedule: 'other', at: T0, outcome: 'skipped', reason: 'paused', recordedAt: T0 }]);

  const first = await client.getSchedule('busy');
  expect(first.total).toBe(120);
  expect(first.fires).toHaveLength(50);
  expect(first.fires[0]!.at).toBe(T0 + 119 * 60_000);
  expect(first.lastFire?.at).toBe(T0 + 119 * 60_000);
  const seen = [...first.fires];
  let next = first.next;
  for (let pages = 0; next !== undefined && pages < 10; pages++) {
    const page = await client.getSchedule('busy', { limit: 50, before: next });
    seen.push(...page.fires);
    next = page.next;
  }
  expect(next).toBeUndefined();
  expect(seen.map((f) => f.at)).toEqual(records.map((r) => r.at).reverse());
  expect((await client.getSchedule('busy', { limit: 3 })).fires.map((f) => f.at - T0)).toEqual([119, 118, 117].map((i) => i * 60_000));
});

test('pause and resume show in the view, remove forgets the schedule, run-now starts its task at once', async () => {
  const { broker, client } = setup();
  await client.addSchedule({ name: 'nightly', cron: '0 3 * * *', tz: 'Europe/Berlin', command: [fixture('quick.mjs')] });
  const paused = await client.setSchedulePaused('nightly', true);
  expect(paused.schedule.paused).toBe(true);
  expect(paused.nextFireAt).toBeUndefined();
  const resumed = await client.setSchedulePaused('nightly', false);
  expect(resumed.nextFireAt).toBe(Date.parse('2026-12-06T02:00:00Z'));

  const fire = await client.runScheduleNow('nightly');
  expect(fire).toMatchObject({ schedule: 'nightly', at: T0, outcome: 'ran', manual: true });
  await waitFor(() => broker.get(fire.taskId!)?.state === 'succeeded', 'the manual run to succeed');
  expect((await client.getSchedule('nightly')).fires).toEqual([fire]);

  await client.removeSchedule('nightly');
  expect(await client.listSchedules()).toEqual([]);
  expect(await refusal(client.getSchedule('nightly'))).toEqual({ code: 'not_found', message: 'No schedule named "nightly"' });
});

test('an unknown name, an invalid schedule and a refused command are each one line from the one table, nothing stored', async () => {
  const { store, client } = setup();
  for (const call of [
    client.getSchedule('nope'),
    client.setSchedulePaused('nope', true),
    client.removeSchedule('nope'),
    client.runScheduleNow('nope'),
  ])
    expect(await refusal(call)).toEqual({ code: 'not_found', message: 'No schedule named "nope"' });

  const both = await refusal(client.addSchedule({ name: 'both', cron: '* * * * *', everyMs: 2000, command: [fixture('quick.mjs')] }));
  expect(both).toEqual({ code: 'invalid_request', message: 'invalid schedule: a schedule has exactly one of --cron and --every' });
  const zone = await refusal(client.addSchedule({ name: 'zone', cron: '0 3 * * *', tz: 'Mars/Olympus', command: [fixture('quick.mjs')] }));
  expect(zone.code).toBe('invalid_request');
  expect(zone.message).toContain('--tz Mars/Olympus is not an IANA time zone');
  const refused = await refusal(client.addSchedule({ name: 'evil', everyMs: 60_000, command: ['/bin/sh', '-c', 'echo pwned'] }));
  expect(refused.code).toBe('refused');
  expect(refused.message).toMatch(/^refused `\/bin\/sh -c echo pwned` .*from a schedule/);
  expect(await refusal(client.addSchedule('nightly' as never))).toEqual({
    code: 'invalid_request',
    message: 'Expected the schedule to be an object, got `nightly` (string)',
  });
  expect((await refusal(client.getSchedule('x', { limit: 0 }))).code).toBe('invalid_request');
  for (const failure of [both, zone, refused]) expect(failure.message).not.toContain('\n');
  expect(store.list()).toEqual([]);
});

test('a schedule of a preset runs the preset command line; an unknown preset is refused naming the hub presets', async () => {
  const { store, client } = setup();
  const added = await client.addSchedule({ name: 'demo', everyMs: 60_000, preset: 'quick' });
  expect(added.schedule.command).toEqual([fixture('quick.mjs'), '--fast']);
  expect(added.schedule.preset).toBeUndefined();
  expect(await refusal(client.addSchedule({ name: 'other', everyMs: 60_000, preset: 'nope' }))).toEqual({
    code: 'invalid_request',
    message: 'No preset named "nope" on this hub (presets: quick)',
  });
  expect(store.list().map((schedule) => schedule.name)).toEqual(['demo']);
});

test('a hub without a scheduler refuses every schedule call with one line', async () => {
  const { broker } = makeBroker();
  const pair = createInMemoryPair(broker);
  pairs.push(pair);
  for (const call of [
    pair.client.listSchedules(),
    pair.client.getSchedule('x'),
    pair.client.addSchedule({ name: 'x', everyMs: 2000, command: ['node'] }),
    pair.client.setSchedulePaused('x', true),
    pair.client.removeSchedule('x'),
    pair.client.runScheduleNow('x'),
  ])
    expect(await refusal(call)).toEqual({ code: 'conflict', message: NO_SCHEDULER });
});
