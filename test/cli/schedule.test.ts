/**
 * `backchannel schedule` against a running hub (`backchannel serve`), all real processes: an
 * `--every 2s` schedule runs and records its fires; a fire during a run is skipped `overlap`; a hub
 * stopped across fire times gives exactly one catch-up run after its restart; a command the run
 * policy refuses cannot be scheduled; pause, resume, rm and run-now; bad input is one line each.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { FireRecord, ScheduleDetails, ScheduleView } from '../../src/bridge/contract.js';
import { fixture, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { makeRepo } from '../helpers/git-repo.js';
import { cli, hubEnv, start, startHub, type Hub, type HubEnv } from '../hub/control/hub-process.js';

const QUICK = fixture('quick.mjs');
const SLEEPER = fixture('sleeper.mjs');

async function ok(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const run = await cli(args, env);
  expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
  return run.stdout;
}

async function details(name: string, env: NodeJS.ProcessEnv, limit = 100): Promise<ScheduleDetails> {
  return JSON.parse(await ok(['schedule', 'show', '--json', '--limit', String(limit), name], env)) as ScheduleDetails;
}

/** Stops a hub as Ctrl-C does and waits for it to exit. */
async function stopHub(hub: Hub): Promise<void> {
  hub.child.kill('SIGTERM');
  expect(await hub.exited).toBe(0);
}

/** How long a condition polled through CLI processes may take: each is a Node start, seconds on a busy machine. */
const POLL_MS = 120_000;
/** Between two polls: each is a new CLI process (about 0.3 s of CPU), so polling every 200 ms kept a core half busy. */
const POLL_EVERY_MS = 500;

const ran = (fires: readonly FireRecord[]) => fires.filter((fire) => fire.outcome === 'ran');

// Each test starts a hub and runs a dozen CLI processes one after another: a minute on a busy machine, more under load.
describe('backchannel schedule against a running hub', { timeout: 300_000 }, () => {
  test('--every 2s runs and records three fires, each naming a task that succeeded; ls shows the last run and its state', async () => {
    const hub = hubEnv();
    const proc = await startHub(hub);
    const added = await ok(['schedule', 'add', 'every2', '--every', '2s', '--', QUICK], hub.env);
    expect(added).toMatch(/^schedule every2 added \(every 2s\); next fire \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d\n$/);
    const three = await waitFor(
      async () => {
        const fires = ran((await details('every2', hub.env)).fires);
        return fires.length >= 3 && fires;
      },
      'three fires to be recorded',
      POLL_MS,
      POLL_EVERY_MS,
    );
    // Newest first, on the 2 s grid (a fire skipped for overlap on a busy machine leaves a gap of 4 s), each its own task.
    const gaps = three.slice(1).map((fire, i) => three[i]!.at - fire.at);
    expect(gaps.every((gap) => gap > 0 && gap % 2000 === 0)).toBe(true);
    expect(new Set(three.map((fire) => fire.taskId)).size).toBe(three.length);
    for (const fire of three.slice(0, 3)) {
      const waited = await cli(['wait', '--json', fire.taskId!], hub.env);
      expect(waited.code, waited.stderr).toBe(0);
    }
    const listed = JSON.parse(await ok(['schedule', 'ls', '--json'], hub.env)) as ScheduleView[];
    expect(listed).toHaveLength(1);
    expect(listed[0]!.schedule).toMatchObject({ name: 'every2', everyMs: 2000, command: [QUICK], overlap: 'skip', catchUp: 'latest' });
    const table = await ok(['schedule', 'ls'], hub.env);
    expect(table).toMatch(/^NAME\s+NEXT FIRE\s+LAST RUN\s+TASK\s+STATE\s+SCHEDULE\n/);
    expect(table).toMatch(/\nevery2\s+\S+T\S+\s+\S+T\S+\s+[0-9a-f]{12}\s+(succeeded|running|queued)\s+every 2s\n$/);
    const shown = await ok(['schedule', 'show', 'every2'], hub.env);
    expect(shown).toMatch(/\nFires, newest first.*:\nAT\s+OUTCOME\s+DETAIL\n\S+\s+ran\s+task [0-9a-f]{12}\n/);
    await stopHub(proc);
  });

  test('a fire while the last run is still active is skipped and recorded with the reason overlap', async () => {
    const hub = hubEnv();
    const proc = await startHub(hub);
    await ok(['schedule', 'add', 'slow', '--every', '1s', '--overlap', 'skip', '--', SLEEPER], hub.env);
    const skipped = await waitFor(
      async () => {
        const { fires } = await details('slow', hub.env);
        return ran(fires).length === 1 && fires.find((fire) => fire.outcome === 'skipped' && fire.reason === 'overlap');
      },
      'a fire to be skipped for overlap',
      POLL_MS,
      POLL_EVERY_MS,
    );
    expect(skipped).toMatchObject({ schedule: 'slow', outcome: 'skipped', reason: 'overlap' });
    const { fires, activeRuns } = await details('slow', hub.env);
    expect(activeRuns).toBe(1);
    expect(ran(fires)).toHaveLength(1);
    await ok(['schedule', 'rm', 'slow'], hub.env);
    await ok(['cancel', ran(fires)[0]!.taskId!], hub.env);
    await stopHub(proc);
  });

  test('a hub stopped across fire times gives exactly one catch-up run after the restart, recorded catchUp; the misses are hub_down', async () => {
    const hub: HubEnv = hubEnv();
    const first = await startHub(hub);
    await ok(['schedule', 'add', 'nightly', '--every', '2s', '--', QUICK], hub.env);
    const before = await waitFor(async () => ran((await details('nightly', hub.env)).fires)[0], 'the first fire', POLL_MS, POLL_EVERY_MS);
    await stopHub(first);
    const stoppedAt = Date.now();
    // Down across at least two fire times: a condition on the clock, not a sleep of a guessed length.
    await waitFor(() => Date.now() >= stoppedAt + 4500, 'two fire times to pass while the hub is down', 30_000, 100);
    const second = await startHub(hub);
    const caughtUp = await waitFor(
      async () => (await details('nightly', hub.env)).fires.filter((fire) => fire.catchUp),
      'the catch-up run',
      POLL_MS,
      POLL_EVERY_MS,
    );
    const all = (await details('nightly', hub.env, 500)).fires;
    expect(all.filter((fire) => fire.catchUp)).toHaveLength(1);
    expect(caughtUp[0]).toMatchObject({ outcome: 'ran', catchUp: true, taskId: expect.any(String) });
    const down = all.filter((fire) => fire.outcome === 'skipped' && fire.reason === 'hub_down');
    expect(down.length).toBeGreaterThan(0);
    // Everything after the last fire before the stop and up to the catch-up was missed, and nothing ran twice.
    expect(down.every((fire) => fire.at > before.at && fire.at < caughtUp[0]!.at)).toBe(true);
    const times = ran(all).map((fire) => fire.at);
    expect(new Set(times).size).toBe(times.length);
    const waited = await cli(['wait', caughtUp[0]!.taskId!], hub.env);
    expect(waited.code, waited.stderr).toBe(0);
    await stopHub(second);
  });

  test('pause records paused fires, resume fires again, run-now prints the id of a task that runs, rm forgets the schedule', async () => {
    const hub = hubEnv();
    const proc = await startHub(hub);
    await ok(['schedule', 'add', 'nightly', '--cron', '0 3 * * *', '--tz', 'Europe/Berlin', '--', QUICK], hub.env);
    await ok(['schedule', 'add', 'often', '--every', '1s', '--', QUICK], hub.env);
    expect(await ok(['schedule', 'pause', 'often'], hub.env)).toBe('paused often\n');
    const paused = await waitFor(
      async () => {
        const shown = await details('often', hub.env);
        return shown.fires[0]?.reason === 'paused' && shown;
      },
      'a fire to be recorded paused',
      POLL_MS,
      POLL_EVERY_MS,
    );
    expect(paused.schedule.paused).toBe(true);
    expect(paused.nextFireAt).toBeUndefined();
    expect(await ok(['schedule', 'resume', 'often'], hub.env)).toMatch(/^resumed often; next fire \S+\n$/);
    await waitFor(
      async () => (await details('often', hub.env)).fires[0]?.outcome === 'ran',
      'a fire to run after the resume',
      POLL_MS,
      POLL_EVERY_MS,
    );

    const id = (await ok(['schedule', 'run-now', 'nightly'], hub.env)).trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const waited = await cli(['wait', '--json', id], hub.env);
    expect(waited.code, waited.stderr).toBe(0);
    expect((await details('nightly', hub.env)).fires).toMatchObject([{ outcome: 'ran', manual: true, taskId: id }]);

    expect(JSON.parse(await ok(['schedule', 'rm', '--json', 'often'], hub.env))).toEqual({ name: 'often', removed: true });
    const left = JSON.parse(await ok(['schedule', 'ls', '--json'], hub.env)) as ScheduleView[];
    expect(left.map((view) => view.schedule.name)).toEqual(['nightly']);
    expect(left[0]!.nextFireAt).toBeGreaterThan(Date.now());
    // ls prints the next fire in the local time of whoever runs it, with its offset (Kolkata: +05:30 all year).
    const kolkata = await ok(['schedule', 'ls'], { ...hub.env, TZ: 'Asia/Kolkata' });
    const local = new Date(left[0]!.nextFireAt! + 5.5 * 3_600_000).toISOString().slice(0, 19);
    expect(kolkata).toMatch(new RegExp(`\\nnightly\\s+${local}\\+05:30\\s`));
    await stopHub(proc);
  });

  test('bad input is one line each, with the exit code of its kind, and nothing is stored', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const unknown = await cli(['schedule', 'show', 'nope'], hub.env);
    expect(unknown).toEqual({ code: 1, stdout: '', stderr: 'backchannel schedule show: No schedule named "nope"\n' });
    for (const action of ['pause', 'resume', 'rm', 'run-now']) {
      const run = await cli(['schedule', action, 'nope'], hub.env);
      expect(run).toEqual({ code: 1, stdout: '', stderr: `backchannel schedule ${action}: No schedule named "nope"\n` });
    }
    const zone = await cli(['schedule', 'add', 'x', '--cron', '0 3 * * *', '--tz', 'Mars/Olympus', '--', QUICK], hub.env);
    expect(zone).toEqual({
      code: 2,
      stdout: '',
      stderr: 'backchannel schedule add: --tz Mars/Olympus is not an IANA time zone (e.g. Europe/Berlin, America/New_York)\n',
    });
    const fields = await cli(['schedule', 'add', 'x', '--cron', '0 3 * *', '--', QUICK], hub.env);
    expect(fields).toMatchObject({
      code: 2,
      stderr: 'backchannel schedule add: --cron "0 3 * *" has 4 fields; give 5 (minute first) or 6 (seconds first)\n',
    });
    const json = await cli(['schedule', 'show', '--json', 'nope'], hub.env);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({ status: 'error', code: 'not_found', message: 'No schedule named "nope"' });
    const preset = await cli(['schedule', 'add', 'x', '--every', '1h', '--preset', 'nope'], hub.env);
    expect(preset.code).toBe(2);
    expect(preset.stderr).toMatch(/^backchannel schedule add: No preset named "nope" on this hub \(presets: .*progress.*\)\n$/);
    expect(JSON.parse(await ok(['schedule', 'ls', '--json'], hub.env))).toEqual([]);
    // A preset is kept as its command line.
    const demo = JSON.parse(
      await ok(['schedule', 'add', 'demo', '--json', '--every', '1h', '--preset', 'progress'], hub.env),
    ) as ScheduleView;
    expect(demo.schedule.command).toEqual([
      expect.stringMatching(/demo-agents\/agent\.mjs$/),
      '--mode=progress',
      '--steps=20',
      '--interval=300',
    ]);
  });

  test('a command the run policy refuses from the schedule door cannot be scheduled: a clear error, exit 1, nothing stored; an allowed one keeps every option', async () => {
    const hub = hubEnv();
    // Only the quick fixture may run, from any door.
    fs.writeFileSync(hub.env.BACKCHANNEL_CONFIG!, `run_policy:\n  allow:\n    - command: ${JSON.stringify(QUICK)}\n`);
    const proc = await startHub(hub);
    // Another door (here the panel's HTTP API, claiming to be the owner's terminal) is judged by the policy.
    const url = new URL(proc.url);
    const refused = await fetch(`${url.origin}/api/schedules?token=${url.searchParams.get('token')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'evil', everyMs: 60_000, origin: 'cli', command: ['/bin/sh', '-c', 'echo pwned'] }),
    });
    expect(refused.status).toBe(403);
    const answer = (await refused.json()) as { error: { message: string } };
    expect(answer.error.message).toMatch(/^refused `\/bin\/sh -c echo pwned` .*from a schedule: /);
    expect(JSON.parse(await ok(['schedule', 'ls', '--json'], hub.env))).toEqual([]);
    // The owner's own terminal is the owner: its schedule is stored, as its `run` would run (issue 46 §5).
    await ok(['schedule', 'add', 'mine', '--every', '1h', '--', '/bin/sh', '-c', 'echo mine'], hub.env);
    await ok(['schedule', 'rm', 'mine'], hub.env);
    // An allowed command is stored with every option add takes (a worktree schedule names a git repository).
    const repo = makeRepo();
    const view = JSON.parse(
      await ok(
        [
          'schedule',
          'add',
          'fine',
          '--json',
          '--every',
          '1h',
          '--overlap',
          'buffer-one',
          '--catch-up',
          'all',
          '--catch-up-window',
          '12h',
          '--worktree',
          repo,
          '--max-tokens',
          '1000',
          '--max-cost-usd',
          '0.5',
          '--max-tokens-per-day',
          '5000',
          '--max-cost-usd-per-day',
          '2.5',
          '--cwd',
          repo,
          '--',
          QUICK,
        ],
        hub.env,
      ),
    ) as ScheduleView;
    expect(view.schedule).toMatchObject({
      name: 'fine',
      everyMs: 3_600_000,
      overlap: 'buffer-one',
      catchUp: 'all',
      catchUpWindowMs: 43_200_000,
      worktree: repo,
      maxTokens: 1000,
      maxCostUsd: 0.5,
      maxTokensPerDay: 5000,
      maxCostUsdPerDay: 2.5,
      cwd: repo,
      command: [QUICK],
    });
    expect((JSON.parse(await ok(['schedule', 'ls', '--json'], hub.env)) as ScheduleView[]).map((v) => v.schedule.name)).toEqual(['fine']);
  });

  test('usage errors are found before any hub is asked: one line and the pointer to --help, exit 2', async () => {
    const { env } = hubEnv();
    const both = await cli(['schedule', 'add', 'x', '--cron', '* * * * *', '--every', '2s', '--', QUICK], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe(
      'backchannel schedule add: invalid schedule: a schedule has exactly one of --cron and --every\nRun `backchannel schedule --help` for usage.\n',
    );
    const every = await cli(['schedule', 'add', 'x', '--every', 'often', '--', QUICK], env);
    expect(every.code).toBe(2);
    expect(every.stderr.split('\n')[0]).toBe(
      'backchannel schedule add: Expected `--every` to be a duration like 30s, 5m or 1h, got `often`',
    );
    const noDash = await cli(['schedule', 'add', 'x', '--every', '2s', QUICK], env);
    expect(noDash.code).toBe(2);
    expect(noDash.stderr.split('\n')[0]).toMatch(/^backchannel schedule add: put `--` before the command/);
    const action = await cli(['schedule', 'list'], env);
    expect(action.code).toBe(2);
    expect(action.stderr.split('\n')[0]).toBe('backchannel schedule: unknown action "list" (add, ls, show, pause, resume, rm, run-now)');
    const limit = await cli(['schedule', 'show', 'x', '--limit', '501'], env);
    expect(limit.code).toBe(2);
    expect(limit.stderr.split('\n')[0]).toBe('backchannel schedule show: Expected `--limit` to be an integer from 1 to 500, got `501`');
  });

  test('the docs’ first example works out of the box from the owner’s terminal, with no run policy (issue 46 §5)', async () => {
    const hub = hubEnv();
    fs.writeFileSync(hub.env.BACKCHANNEL_CONFIG!, '# the owner allowed nothing more\n');
    const docs = fs.readFileSync(path.join(ROOT, 'docs', 'schedules.md'), 'utf8');
    const first = /^```sh tested-by=test\/cli\/schedule\.test\.ts\n(.*)$/m.exec(docs)![1]!;
    expect(first).toBe('backchannel schedule add every2 --every 2s -- node tick.mjs');
    const cwd = tempDir('bc-tick-');
    fs.copyFileSync(QUICK, path.join(cwd, 'tick.mjs'));
    fs.copyFileSync(fixture('raw-agent.mjs'), path.join(cwd, 'raw-agent.mjs'));
    await startHub(hub);
    const add = start(first.split(' ').slice(1), hub.env, cwd);
    expect({ code: await add.exited, stderr: add.stderr() }).toEqual({ code: 0, stderr: '' });
    const fire = await waitFor(
      async () => ran((await details('every2', hub.env)).fires)[0],
      'a fire of the docs’ schedule',
      POLL_MS,
      POLL_EVERY_MS,
    );
    const waited = await cli(['wait', '--json', fire.taskId!], hub.env);
    expect(waited.code, waited.stderr).toBe(0);
    await ok(['schedule', 'rm', 'every2'], hub.env);
  });

  test('without a hub every action is refused with one line', async () => {
    const hub = hubEnv();
    const run = await cli(['schedule', 'ls'], hub.env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^backchannel schedule ls: no Backchannel hub is running .*\n$/);
  });
});
