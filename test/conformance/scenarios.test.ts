/** The scenario judges read the broker's log events, never its text: a note is judged by its fields. */
import { describe, expect, test } from 'vitest';
import type { MachineLoad, Observation } from '../../src/conformance/observe.js';
import { formatReport, judge as judgeScenario, type ReportCard } from '../../src/conformance/check.js';
import { ALLOWED_SILENCE_MS, asSent, BUSY_DELAY_MS, HEARTBEAT_MS, judgeSilences, SCENARIOS } from '../../src/conformance/scenarios.js';
import type { LogEvent, LogLine, TaskSnapshot } from '../../src/model/task.js';

const TIME = '2026-11-30T08:00:00.000Z';
const FINAL = { task_id: 't', status: 'success', data: {}, meta: { timestamp: TIME } } as const;

function note(text: string, event?: LogEvent): LogLine {
  return event ? { time: TIME, stream: 'broker', text, event } : { time: TIME, stream: 'broker', text };
}

function run(log: LogLine[], snapshot: Partial<TaskSnapshot> = {}, extra: Partial<Observation> = {}): Observation {
  return {
    plan: {},
    snapshot: {
      id: 't',
      label: 'check',
      state: 'succeeded',
      command: 'agent',
      args: [],
      cwd: '/',
      attempt: 1,
      maxAttempts: 1,
      createdAt: TIME,
      counters: { malformed: 0, rejected: 0, ignored: 0 },
      exitCode: 0,
      ...snapshot,
    },
    payloads: [],
    log,
    receivedAt: [],
    endedAt: 100,
    load: { delayMs: 0, perCore: 0.5, late: [] },
    ...extra,
  };
}

function judge(name: string, runs: Record<string, Observation>) {
  const scenario = SCENARIOS.find((s) => s.name === name)!;
  return scenario.judge(runs);
}

const received = note('received via socket: {"status":"partial"}', { kind: 'received', via: 'socket' });

describe('scenario judges', () => {
  test('connect: an auth rejection fails it, whatever the words; text alone that looks like one does not', () => {
    const refused = note('rejected: the key did not match', {
      kind: 'problem',
      problem: 'rejected',
      detail: 'the key did not match',
      cause: 'auth',
    });
    expect(judge('connect', { main: run([refused, received]) })).toMatchObject({ status: 'fail', line: 'the key did not match' });
    expect(judge('connect', { main: run([note('rejected: wrong token'), received]) })).toEqual({ status: 'pass' });
  });

  test('connect and task-id count arrived lines by their event, not by a "received via" prefix', () => {
    expect(judge('connect', { main: run([note('received via socket: {}')]) })).toMatchObject({ status: 'fail' });
    const wrongId = note('rejected: not ours', { kind: 'problem', problem: 'rejected', detail: 'not ours', cause: 'task-id' });
    const ok = run([received], {}, { payloads: [FINAL] });
    expect(judge('task-id', { argvOnly: run([wrongId, received]), envOnly: ok })).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('wrong one: not ours'),
    });
    expect(judge('task-id', { argvOnly: ok, envOnly: ok })).toEqual({ status: 'pass' });
  });

  test('cancel: the confirmation is the cancel-confirmed event; a late success is told by its status', () => {
    const cancelled = { state: 'cancelled' as const, reason: 'cancelled' as const, signal: null };
    const confirmed = run(
      [note('stopping', { kind: 'stopping', reason: 'cancelled' }), note('ok', { kind: 'cancel-confirmed' })],
      cancelled,
      { cancelAt: 10 },
    );
    expect(judge('cancel', { cancelled: confirmed })).toMatchObject({ status: 'pass' });
    const unconfirmed = run([note('the agent confirmed the cancel')], { ...cancelled, signal: 'SIGKILL' }, { cancelAt: 10 });
    expect(judge('cancel', { cancelled: unconfirmed })).toMatchObject({ status: 'fail' });
    const late = note('ignored: it was done', { kind: 'problem', problem: 'ignored', detail: 'it was done', status: 'success' });
    expect(judge('cancel', { cancelled: run([late], cancelled, { cancelAt: 10 }) })).toMatchObject({ status: 'warn' });
  });

  test('cancel: an unconfirmed cancel is unjudged only on a busy machine, for an agent SIGTERM ended with nothing from it after the cancel', () => {
    const killed = { state: 'cancelled' as const, reason: 'cancelled' as const, signal: 'SIGTERM' as const };
    const busy: MachineLoad = { delayMs: 4109, perCore: 5.5, late: [{ at: 3000, ms: 4109 }] };
    // The python template on a machine at load 11 (CI): this process's timers 4 s late after the cancel.
    const starved = run([], killed, { cancelAt: 1000, receivedAt: [200, 900], endedAt: 8000, load: busy });
    expect(judge('cancel', { cancelled: starved })).toMatchObject({
      status: 'unjudged',
      detail: expect.stringContaining('the agent exited by SIGTERM 7000 ms after it, 0 lines from it in between'),
    });
    // Lines read while this process ran that late behind are the socket's backlog, written before the cancel.
    const backlog = run([], killed, { cancelAt: 1000, receivedAt: [200, 900, 1001, 1500, 5000], endedAt: 8000, load: busy });
    expect(judge('cancel', { cancelled: backlog })).toMatchObject({
      status: 'unjudged',
      detail: expect.stringContaining('3 lines from it in between'),
    });
    // Heard from after that backlog (it kept heartbeating): it ignored the cancel, however busy the machine.
    const alive = run([], killed, { cancelAt: 1000, receivedAt: [200, 900, 1500, 6000], endedAt: 8000, load: busy });
    expect(judge('cancel', { cancelled: alive })).toMatchObject({ status: 'fail', detail: expect.stringContaining('exited by SIGTERM') });
    // Ended by SIGKILL: it ignored SIGTERM as well (the ignores-cancel fixture), however busy the machine.
    expect(judge('cancel', { cancelled: { ...starved, snapshot: { ...starved.snapshot, signal: 'SIGKILL' } } })).toMatchObject({
      status: 'fail',
    });
    // Busy before the cancel only: the agent had its grace.
    const lateBefore: MachineLoad = { delayMs: 4109, perCore: 5.5, late: [{ at: 600, ms: 400 }] };
    expect(judge('cancel', { cancelled: { ...starved, load: lateBefore } })).toMatchObject({ status: 'fail' });
    // A quiet machine: a fail.
    expect(judge('cancel', { cancelled: { ...starved, load: { delayMs: 0, perCore: 0.5, late: [] } } })).toMatchObject({ status: 'fail' });
  });

  test('cancel: an unconfirmed cancel says how and when the agent ended, with its exit code and its last stderr line', () => {
    const exited = { state: 'cancelled' as const, reason: 'cancelled' as const, signal: null, exitCode: 130 };
    const stderr: LogLine = { time: TIME, stream: 'stderr', text: '[backchannel] the handler did not stop within 2.5 s of the cancel' };
    const gone = run([stderr], exited, { cancelAt: 1000, receivedAt: [200, 900, 1200], endedAt: 4500, load: QUIET });
    expect(judge('cancel', { cancelled: gone })).toEqual({
      status: 'fail',
      detail:
        'no `cancelled` payload after the cancel; the agent exited by itself (exit code 130) 3500 ms after it, 1 line from it in between',
      line: stderr.text,
    });
  });

  test('clean-exit and final-once: leftover processes and late lines come from events', () => {
    const leftover = note('processes were left', { kind: 'leftover-processes' });
    expect(judge('clean-exit', { main: run([leftover]) })).toMatchObject({ status: 'fail', line: 'processes were left' });
    expect(
      judge('clean-exit', { main: run([note('the agent left processes running in its process group; killed them')], { result: FINAL }) }),
    ).toEqual({
      status: 'pass',
    });
    expect(judge('clean-exit', { main: run([]) })).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(/^not verified: no final payload/),
    });
    expect(judge('final-once', { main: run([]) })).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(/^not verified: no final payload/),
    });
    expect(judge('final-once', { main: run([], { result: FINAL }) })).toEqual({ status: 'pass' });
    const ignored = note('ignored: x', {
      kind: 'problem',
      problem: 'ignored',
      detail: 'partial payload via socket after the task was decided',
    });
    expect(judge('final-once', { main: run([ignored]) })).toMatchObject({
      status: 'fail',
      line: 'partial payload via socket after the task was decided',
    });
  });
});

/** Lines arriving at these gaps (ms), starting at 100 ms: a run of the heartbeat scenario. */
function beats(gaps: number[], load: MachineLoad = QUIET): Observation {
  const receivedAt = [100];
  for (const gap of gaps) receivedAt.push(receivedAt.at(-1)! + gap);
  return run([], {}, { receivedAt, load });
}

const QUIET: MachineLoad = { delayMs: 0, perCore: 0.5, late: [] };
/** This process ran 1750 ms late at 2500 ms into the run (inside the long gap of the cases below). */
const BUSY_LOOP: MachineLoad = { delayMs: BUSY_DELAY_MS + 1500, perCore: 0.5, late: [{ at: 2500, ms: BUSY_DELAY_MS + 1500 }] };
/** Late as much, but at 150 ms, outside the long gap. */
const LATE_ELSEWHERE: MachineLoad = { ...BUSY_LOOP, late: [{ at: 150, ms: BUSY_DELAY_MS + 1500 }] };
const LOADED: MachineLoad = { delayMs: 40, perCore: 7.5, late: [{ at: 900, ms: 40 }] };

describe('the heartbeat judge reads the gaps between the agent lines, with a margin and the machine load', () => {
  // [case, gaps between lines (ms), machine load, verdict, words of its detail]
  const CASES: Array<[string, number[], MachineLoad, string, RegExp]> = [
    [
      'a beat every interval passes',
      [5, 1000, 1010, 990, 1000, 1000],
      QUIET,
      'pass',
      /the longest 1010 ms \(allowed: 3 × CURSOR_HEARTBEAT_MS = 3000 ms\)/,
    ],
    ['two late beats are within the margin', [5, 2900, 1000, 1100], QUIET, 'pass', /the longest 2900 ms/],
    ['silence over the margin on a quiet machine fails', [5, 1000, 1000, 3500], QUIET, 'fail', /silent for 3500 ms while busy/],
    ['no heartbeat at all fails, however loaded the machine', [5, 5000], LOADED, 'fail', /silent for 5000 ms/],
    [
      'a long gap beside a kept cadence on a loaded machine cannot be judged',
      [5, 1000, 1000, 3600],
      LOADED,
      'unjudged',
      /^could not judge \(machine too busy\): .*3600 ms.*load average is 7\.5 per CPU/,
    ],
    [
      'a gap the checker’s own delay during it explains cannot be judged',
      [5, 1000, 3600],
      BUSY_LOOP,
      'unjudged',
      /timers ran up to 1750 ms late/,
    ],
    ['the checker’s delay outside the gap explains nothing', [5, 1000, 3600], LATE_ELSEWHERE, 'fail', /silent for 3600 ms/],
    ['silence for the whole busy time fails even when the checker ran late during it', [5, 4600], BUSY_LOOP, 'fail', /silent for 4600 ms/],
    ['an agent that did not stay busy is not verified', [5, 10, 20], QUIET, 'warn', /not verified: .*busy_ms/],
    // A loaded machine delayed the agent's first line: the span seen is short of busy_ms, but the silence is still one.
    ['a silence over the margin fails though the span looks short', [5, 4429], LOADED, 'fail', /silent for 4429 ms while busy/],
  ];
  test.each(CASES)('%s', (_name, gaps, load, status, detail) => {
    const verdict = judgeSilences(beats(gaps, load), 5000);
    expect(verdict.status).toBe(status);
    expect(verdict.detail).toMatch(detail);
  });

  describe('a run the watchdog ended (stalled)', () => {
    // The agent's last line at 100 ms; the watchdog ended the run 15 s later.
    const stalled = (late: MachineLoad['late'], perCore = 0.5) =>
      judgeSilences(
        run(
          [],
          { state: 'failed', reason: 'stalled', message: 'stalled: no message for 15000 ms' },
          {
            receivedAt: [100],
            endedAt: 15_200,
            load: { delayMs: Math.max(0, ...late.map((l) => l.ms)), perCore, late },
          },
        ),
        5000,
      );

    test('on a quiet machine it fails', () => {
      expect(stalled([])).toEqual({ status: 'fail', detail: 'silent for the whole 15000 ms watchdog: stalled: no message for 15000 ms' });
    });

    test('when this process itself stalled for about the whole silence, it cannot be judged', () => {
      // As beside two spinners at a load of 20 per CPU: this process's timers ran 16.4 s late.
      const verdict = stalled([{ at: 15_100, ms: 16_412 }], 20.6);
      expect(verdict.status).toBe('unjudged');
      expect(verdict.detail).toMatch(
        /^could not judge \(machine too busy\): silent for the whole 15000 ms watchdog: .*up to 16412 ms late during that silence of 15100 ms/,
      );
    });

    test('a delay of this process shorter than the silence explains nothing: it fails', () => {
      expect(stalled([{ at: 8000, ms: 5000 }], 20.6).status).toBe('fail');
      // Late enough, but before the agent fell silent.
      expect(stalled([{ at: 50, ms: 16_000 }], 20.6).status).toBe('fail');
    });
  });

  test('the margin is three intervals, the broker watchdog rule', () => {
    expect(ALLOWED_SILENCE_MS).toBe(3 * HEARTBEAT_MS);
  });
});

describe('the report card', () => {
  test('an unjudged scenario is marked and counted apart, and is not a failure', () => {
    const card: ReportCard = {
      agent: 'node agent.mjs',
      results: [
        { name: 'connect', rule: '§3: connect', verdict: { status: 'pass' } },
        { name: 'heartbeat', rule: '§5: heartbeat', verdict: { status: 'unjudged', detail: 'could not judge (machine too busy): x' } },
      ],
      passed: 1,
      failed: 0,
      warnings: 0,
      unjudged: 1,
    };
    const text = formatReport(card);
    expect(text).toMatch(/\? heartbeat {2}§5: heartbeat\n {13}could not judge \(machine too busy\): x\n/);
    expect(text).toContain('1 passed, 0 failed, 0 warning(s), 1 could not be judged (machine too busy: run again)');
  });

  test('a payload is shown as the agent sent it, without the meta the broker adds on receipt', () => {
    const delivered = {
      task_id: 't',
      status: 'success' as const,
      data: {},
      meta: { timestamp: TIME, attempts: 1, channel: 'socket', exit_code: 0, received_at: TIME },
    };
    expect(asSent(delivered)).toEqual({ task_id: 't', status: 'success', data: {}, meta: { timestamp: TIME } });
    expect(asSent({ task_id: 't', status: 'success', meta: { attempts: 1, received_at: TIME } })).toEqual({
      task_id: 't',
      status: 'success',
    });
  });
});

describe('a run cut off by the check deadline', () => {
  const timedOut = { state: 'failed' as const, reason: 'timeout' as const, message: 'timed out after 20000 ms' };
  const payloads = SCENARIOS.find((s) => s.name === 'payloads')!;

  test('on a machine too busy for it, the scenarios reading that run are unjudged', () => {
    const observed = new Map([['main', run([], timedOut, { load: LOADED })]]);
    expect(judgeScenario(payloads, observed, 20_000)).toEqual({
      status: 'unjudged',
      detail: expect.stringMatching(/^could not judge \(machine too busy\): the run hit the 20000 ms deadline while .*7\.5 per CPU/),
    });
  });

  test('on a quiet machine, the scenario judges it as usual (a hung agent fails)', () => {
    const observed = new Map([['main', run([], timedOut, { load: QUIET })]]);
    expect(judgeScenario(payloads, observed, 20_000)).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('no final payload arrived'),
    });
  });
});
