/**
 * The conformance scenarios: each names the protocol rule it checks (docs/protocol.md), the runs it
 * needs, and a judge that turns the observations into pass, fail (with the rule and the line that
 * broke it), warning (could not be checked: the agent did not honour a `conformance` input field) or
 * unjudged (the timing a scenario reads was spoilt by a busy machine: neither a pass nor a failure).
 * Scenarios that read the same run share it (see ./check.ts).
 */
import { ENV_HEARTBEAT_MS, ENV_IPC_PATH, ENV_IPC_TOKEN, ENV_TASK_ID } from '../protocol/index.js';
import type { Payload } from '../protocol/index.js';
import { BROKER_META_KEYS, type LogEvent, type ProblemKind } from '../model/task.js';
import { delayDuring, type MachineLoad, type Observation, type RunPlan } from './observe.js';

type Problem = Extract<LogEvent, { kind: 'problem' }>;

export type Verdict = { status: 'pass'; detail?: string } | { status: 'fail' | 'warn' | 'unjudged'; detail: string; line?: string };

export interface Scenario {
  name: string;
  /** The rule, as docs/protocol.md states it. */
  rule: string;
  /** Runs, by key: scenarios that use the same key share one run. */
  runs: Record<string, RunPlan>;
  judge(runs: Record<string, Observation>): Verdict;
}

/** 1 MB of text with 1-, 2-, 3- and 4-byte UTF-8 characters. */
export const ECHO = 'aé漢🙂'.repeat(Math.ceil(1_048_576 / 10));
/** How long a cooperating agent stays busy for the heartbeat and cancel scenarios. */
const BUSY_MS = 5000;
const CANCEL_BUSY_MS = 15_000;
/** The heartbeat interval the heartbeat run tells the agent (CURSOR_HEARTBEAT_MS). */
export const HEARTBEAT_MS = 1000;
/**
 * The longest silence the heartbeat scenario accepts: three intervals, the broker's own rule (its
 * watchdog is three times the CURSOR_HEARTBEAT_MS it tells), so one or two late beats pass.
 */
export const ALLOWED_SILENCE_MS = 3 * HEARTBEAT_MS;
/**
 * The watchdog of the heartbeat run, well beyond the allowed silence: the scenario judges the gaps it
 * saw between the agent's lines instead of letting a watchdog kill an agent whose beat the machine
 * delayed. (The hand-off would tell a third of it; the run tells HEARTBEAT_MS instead.)
 */
const HEARTBEAT_WATCHDOG_MS = 15_000;
/**
 * When timing is not to be trusted: this process's own timers ran this late (a line can reach the
 * broker that much after the agent wrote it), or the one-minute load average per CPU is this high
 * (the agent's timers are starved as well).
 */
export const BUSY_DELAY_MS = 250;
/** A silence this share of the busy time or longer is the agent's own, however busy the machine. */
const WHOLE_BUSY_TIME = 0.8;
export const BUSY_LOAD_PER_CORE = 2;
/** Grace a cancelled agent has to report `cancelled` (the broker's default), then SIGTERM, then SIGKILL. */
export const CANCEL_GRACE_MS = 3000;
export const KILL_GRACE_MS = 1000;

const MAIN: RunPlan = { conformance: { scenario: 'main', echo: ECHO } };
const ISO_8601 = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/;

const pass = (detail?: string): Verdict => (detail ? { status: 'pass', detail } : { status: 'pass' });
const fail = (detail: string, line?: string): Verdict => (line ? { status: 'fail', detail, line } : { status: 'fail', detail });
const warn = (detail: string): Verdict => ({ status: 'warn', detail });
const unjudged = (detail: string): Verdict => ({ status: 'unjudged', detail: `could not judge (machine too busy): ${detail}` });

/** Why the machine counts as too busy for timing during a run (figures in words), or undefined. */
export function tooBusy(load: MachineLoad): string | undefined {
  if (load.delayMs < BUSY_DELAY_MS && load.perCore < BUSY_LOAD_PER_CORE) return undefined;
  return `this process's timers ran up to ${load.delayMs} ms late and the load average is ${load.perCore.toFixed(1)} per CPU`;
}

/**
 * The heartbeat judge, from the gaps between the agent's own lines (any line proves it alive, as for
 * the broker's watchdog), from its second line on (the first authenticates, and the agent has nothing
 * to say until the broker's input reaches it): every gap within ALLOWED_SILENCE_MS passes. A longer
 * gap fails, unless the machine was too busy to tell (see `tooBusy`) and either the agent kept a
 * heartbeat's cadence elsewhere in the run (two or more gaps near the interval: the long one is a beat
 * the machine delayed) or this process itself ran late enough during that gap to explain it. An agent
 * silent for most of the busy time with no cadence at all fails however busy the machine.
 */
export function judgeSilences(run: Observation, busyMs: number): Verdict {
  if (run.snapshot.reason === 'stalled') return judgeStall(run);
  const times = run.receivedAt.slice(1);
  const span = times.length > 0 ? times.at(-1)! - times[0]! : 0;
  const gaps = times.slice(1).map((time, i) => time - times[i]!);
  const longest = gaps.length > 0 ? Math.max(...gaps) : 0;
  const after = gaps.indexOf(longest);
  const allowed = `allowed: 3 × ${ENV_HEARTBEAT_MS} = ${ALLOWED_SILENCE_MS} ms`;
  // A silence over the margin is evidence whatever the span: a loaded machine can shorten the span
  // it observed (the first line reaching it late), never lengthen a silence the agent did not keep.
  if (longest <= ALLOWED_SILENCE_MS && span < busyMs * 0.9) {
    return warn(`not verified: the agent's lines spanned ${span} ms; honour \`conformance.busy_ms\` (${busyMs}) to test heartbeats`);
  }
  if (longest <= ALLOWED_SILENCE_MS) return pass(`${gaps.length} intervals between lines, the longest ${longest} ms (${allowed})`);
  const where = `between its lines ${after + 2} and ${after + 3} of ${run.receivedAt.length}`;
  const cadence = gaps.filter((gap) => gap >= HEARTBEAT_MS / 2 && gap <= 2 * HEARTBEAT_MS).length;
  const ownDelay = delayDuring(run.load, times[after]!, times[after + 1]!);
  const explained = longest - ownDelay <= ALLOWED_SILENCE_MS && longest < WHOLE_BUSY_TIME * busyMs;
  const busy = tooBusy(run.load);
  if (busy && (cadence >= 2 || explained)) {
    return unjudged(
      `the agent was silent for ${longest} ms ${where} (${allowed}; ${cadence} other gaps kept the beat; this process ran up to ${ownDelay} ms late meanwhile) while ${busy}`,
    );
  }
  return fail(`silent for ${longest} ms while busy, ${where} (${allowed}; told ${ENV_HEARTBEAT_MS}=${HEARTBEAT_MS})`);
}

/**
 * A run the watchdog ended: nothing came from the agent for HEARTBEAT_WATCHDOG_MS, three times as
 * long as it is asked to stay busy. That fails, unless the machine was too busy to tell and this
 * process itself ran so late during that silence that its own delay explains it (within the allowed
 * silence): the whole machine stalled then, the agent with it, as every other run of such a check
 * shows by hitting its deadline. A shorter delay, or one before the silence began, does not.
 */
function judgeStall(run: Observation): Verdict {
  const stalled = `silent for the whole ${HEARTBEAT_WATCHDOG_MS} ms watchdog: ${run.snapshot.message ?? 'stalled'}`;
  const since = run.receivedAt.at(-1) ?? 0;
  const ownDelay = delayDuring(run.load, since, run.endedAt);
  const busy = tooBusy(run.load);
  if (busy && run.endedAt - since - ownDelay <= ALLOWED_SILENCE_MS) {
    return unjudged(`${stalled}, while ${busy} (up to ${ownDelay} ms late during that silence of ${run.endedAt - since} ms)`);
  }
  return fail(stalled);
}

/**
 * A cancel that no `cancelled` payload confirmed fails, unless the machine was too busy to give the
 * agent its grace: SIGTERM ended it (it did not ignore the signal, as an agent that ignores cancels
 * does), nothing came from it after the cancel that it could not have written before, and this
 * process itself ran at least BUSY_DELAY_MS late meanwhile — a starved agent then met SIGTERM before it
 * was scheduled to answer. Lines read while this process was that late behind are the backlog of the
 * socket (a chatty agent fills its buffer, some 100 KB, before the cancel reaches it): only a line read
 * after that backlog shows the agent went on.
 */
function judgeUnconfirmedCancel(run: Observation, cancelAt: number): Verdict {
  const { signal, exitCode } = run.snapshot;
  const linesAfter = run.receivedAt.filter((at) => at > cancelAt).length;
  const how = signal ? `by ${signal}` : `by itself${exitCode === undefined || exitCode === null ? '' : ` (exit code ${exitCode})`}`;
  const failure =
    `no \`cancelled\` payload after the cancel; the agent exited ${how} ${run.endedAt - cancelAt} ms after it, ` +
    `${linesAfter} line${linesAfter === 1 ? '' : 's'} from it in between`;
  const ownDelay = delayDuring(run.load, cancelAt, run.endedAt);
  const heardFrom = run.receivedAt.some((at) => at > cancelAt + ownDelay);
  const busy = tooBusy(run.load);
  if (busy && signal === 'SIGTERM' && !heardFrom && ownDelay >= BUSY_DELAY_MS) {
    return unjudged(`${failure}, while ${busy} (up to ${ownDelay} ms late after the cancel)`);
  }
  return fail(failure, lastStderr(run));
}

/** The broker's notes of one kind of problem (malformed, rejected, ignored), from their events. */
function problems(run: Observation, kind: ProblemKind): Problem[] {
  return run.log.flatMap((l) => (l.event?.kind === 'problem' && l.event.problem === kind ? [l.event] : []));
}

/** How many lines arrived over `via` (the broker traces each one). */
function received(run: Observation, via: 'socket' | 'stdout'): number {
  return run.log.filter((l) => l.event?.kind === 'received' && l.event.via === via).length;
}

/** Whether the broker noted an event of this kind for the run. */
function noted(run: Observation, kind: LogEvent['kind']): boolean {
  return run.log.some((l) => l.event?.kind === kind);
}

function finalOf(run: Observation): Payload | undefined {
  return run.snapshot.result;
}

function ended(run: Observation): string {
  const s = run.snapshot;
  return `the task ended ${s.state}${s.reason ? ` (${s.reason})` : ''}${s.message ? `: ${s.message}` : ''}`;
}

function taskIdRun(run: Observation, how: string): Verdict | undefined {
  const rejected = problems(run, 'rejected').find((p) => p.cause === 'task-id')?.detail;
  if (rejected) return fail(`with the task id only in ${how}, the agent sent a wrong one: ${rejected}`, rejected);
  if (received(run, 'socket') + received(run, 'stdout') === 0) {
    return fail(`with the task id only in ${how}, the agent sent nothing; ${ended(run)}`, lastStderr(run));
  }
  return undefined;
}

/** Whether the broker took at least one message of the run as the task's (a payload: its task id was right). */
function accepted(run: Observation): boolean {
  return run.payloads.length > 0;
}

function lastStderr(run: Observation): string | undefined {
  return run.log.filter((l) => l.stream === 'stderr').at(-1)?.text;
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'task-id',
    rule: '§1: read the task id from --task-id= first and CURSOR_TASK_ID second',
    runs: { argvOnly: { ...MAIN, unset: [ENV_TASK_ID] }, envOnly: { ...MAIN, taskIdArg: false } },
    judge: (r) =>
      taskIdRun(r.argvOnly!, 'argv (--task-id=)') ??
      taskIdRun(r.envOnly!, 'the environment (CURSOR_TASK_ID)') ??
      (accepted(r.argvOnly!) && accepted(r.envOnly!)
        ? pass()
        : warn('not verified: the broker accepted no message from the agent in one of the runs (see connect and payloads)')),
  },
  {
    name: 'connect',
    rule: '§3: connect to CURSOR_IPC_PATH and authenticate the first line with CURSOR_IPC_TOKEN',
    runs: { main: MAIN },
    judge: ({ main }) => {
      const tokenProblem = problems(main!, 'rejected').find((p) => p.cause === 'auth')?.detail;
      if (tokenProblem) return fail(`the broker refused the connection: ${tokenProblem}`, tokenProblem);
      if (received(main!, 'socket') === 0) return fail('nothing arrived over the socket (the agent did not connect, or only used stdout)');
      return pass();
    },
  },
  {
    name: 'input',
    rule: '§3: read the `input` message (it can be large; it is UTF-8)',
    runs: { main: MAIN },
    judge: ({ main }) => {
      const final = finalOf(main!);
      if (!final) return warn(`not verified: no final payload arrived (see the other scenarios); ${ended(main!)}`);
      const echo = (final.data as { echo?: unknown } | undefined)?.echo;
      if (echo === undefined)
        return warn('not verified: the agent does not return `conformance.echo` as `data.echo` (docs/protocol.md §10)');
      if (echo !== ECHO) {
        const length = typeof echo === 'string' ? echo.length : -1;
        return fail(`data.echo differs from the input sent (${length} characters back for ${ECHO.length} sent)`);
      }
      return pass(`${Buffer.byteLength(ECHO)} bytes of non-ASCII input came back intact`);
    },
  },
  {
    name: 'payloads',
    rule: '§2, §4: one JSON object per line ending in "\\n"; a final payload with task_id, status, data and meta.timestamp (ISO 8601)',
    runs: { main: MAIN },
    judge: ({ main }) => {
      const malformed = problems(main!, 'malformed')[0]?.detail;
      if (malformed !== undefined) return fail(`a line broke the framing or the message rules: ${malformed}`, malformed);
      const final = finalOf(main!);
      if (!final) return fail(`no final payload arrived; ${ended(main!)}`);
      for (const payload of main!.payloads) {
        const timestamp = payload.meta?.timestamp;
        const isFinal = payload === final;
        if (isFinal && payload.data === undefined) return fail(`the final ${payload.status} payload has no "data"`, preview(payload));
        if ((isFinal || timestamp !== undefined) && (typeof timestamp !== 'string' || !ISO_8601.test(timestamp))) {
          return fail(
            `a ${payload.status} payload has meta.timestamp ${JSON.stringify(timestamp)}, not an ISO 8601 time`,
            preview(payload),
          );
        }
      }
      return pass();
    },
  },
  {
    name: 'progress',
    rule: '§4: data.progress of a partial payload is a number from 0 to 100',
    runs: { main: MAIN },
    judge: ({ main }) => {
      let seen = 0;
      for (const payload of main!.payloads) {
        if (payload.status !== 'partial') continue;
        const progress = (payload.data as { progress?: unknown } | null | undefined)?.progress;
        if (progress === undefined) continue;
        seen++;
        if (typeof progress !== 'number' || !(progress >= 0 && progress <= 100)) {
          return fail(`data.progress is ${JSON.stringify(progress)}`, preview(payload));
        }
      }
      return seen > 0
        ? pass(`${seen} partial payload${seen === 1 ? '' : 's'} with data.progress`)
        : warn('not verified: no partial payload carried data.progress');
    },
  },
  {
    name: 'final-once',
    rule: '§5: send exactly one final payload (success, error or cancelled) and nothing after it',
    runs: { main: MAIN },
    judge: ({ main }) => {
      const ignored = problems(main!, 'ignored')[0]?.detail;
      if (ignored !== undefined) return fail(`the agent wrote after its final payload: ${ignored}`, ignored);
      return finalOf(main!) ? pass() : warn(`not verified: no final payload arrived (see the other scenarios); ${ended(main!)}`);
    },
  },
  {
    name: 'heartbeat',
    rule: '§5: while silent, send {"status":"heartbeat"} at least every CURSOR_HEARTBEAT_MS',
    runs: {
      busy: {
        conformance: { scenario: 'heartbeat', busy_ms: BUSY_MS },
        heartbeatTimeoutMs: HEARTBEAT_WATCHDOG_MS,
        set: { [ENV_HEARTBEAT_MS]: String(HEARTBEAT_MS) },
      },
    },
    judge: ({ busy }) => judgeSilences(busy!, BUSY_MS),
  },
  {
    name: 'cancel',
    rule: `§6: on {"type":"cancel"} (or SIGTERM after ${CANCEL_GRACE_MS} ms), stop, send a \`cancelled\` payload and exit before SIGKILL`,
    runs: { cancelled: { conformance: { scenario: 'cancel', busy_ms: CANCEL_BUSY_MS }, cancel: true } },
    judge: ({ cancelled }) => {
      const run = cancelled!;
      // A `success` or `error` after the cancel: ignored by brokers before 0.5, kept as its answer since.
      const finishedFirst =
        problems(run, 'ignored').some((p) => p.status === 'success' || p.status === 'error') || noted(run, 'stop-answered');
      if (run.cancelAt === undefined || run.snapshot.state === 'succeeded' || finishedFirst) {
        return warn('not verified: the agent finished before it could be cancelled; honour `conformance.busy_ms` to test cancel');
      }
      if (!noted(run, 'cancel-confirmed')) return judgeUnconfirmedCancel(run, run.cancelAt);
      if (run.snapshot.signal === 'SIGKILL') {
        const busy = tooBusy(run.load);
        const late = `the agent reported \`cancelled\` but did not exit until SIGKILL (${CANCEL_GRACE_MS + KILL_GRACE_MS} ms after the cancel)`;
        return busy ? unjudged(`${late} while ${busy}`) : fail(late);
      }
      return pass(`cancelled and gone ${run.endedAt - run.cancelAt} ms after the cancel`);
    },
  },
  {
    name: 'stdout-fallback',
    rule: '§7: without CURSOR_IPC_PATH, print each message as a `data: <json>` line on stdout',
    runs: { noSocket: { ...MAIN, unset: [ENV_IPC_PATH, ENV_IPC_TOKEN] } },
    judge: ({ noSocket }) => {
      const final = finalOf(noSocket!);
      if (final?.meta?.channel === 'stdout') return pass();
      return fail(`with no socket, no final payload arrived on stdout; ${ended(noSocket!)}`);
    },
  },
  {
    name: 'clean-exit',
    rule: '§5: exit after the final payload (and its ack), leaving no processes behind',
    runs: { main: MAIN },
    judge: ({ main }) => {
      const leftover = main!.log.find((l) => l.event?.kind === 'leftover-processes');
      if (leftover) return fail('processes the agent started were still running after it exited', leftover.text);
      if (!finalOf(main!)) return warn(`not verified: no final payload arrived to exit after; ${ended(main!)}`);
      const code = main!.snapshot.exitCode;
      if (main!.snapshot.state === 'succeeded' && code !== 0) return warn(`exited with ${code ?? main!.snapshot.signal} after a success`);
      return pass();
    },
  },
  {
    name: 'utf8',
    rule: '§2: every line is UTF-8',
    runs: { main: MAIN },
    judge: ({ main }) => {
      if (main!.payloads.length === 0) return warn('not verified: no payload arrived to read');
      for (const payload of main!.payloads) {
        const text = JSON.stringify(payload.data) ?? '';
        const bad = text.indexOf('\uFFFD');
        if (bad !== -1)
          return fail('a payload holds bytes that are not UTF-8 (decoded as U+FFFD)', text.slice(Math.max(0, bad - 40), bad + 40));
      }
      return pass();
    },
  },
];

/** A payload as the agent sent it: the final one without the meta fields the broker added on receipt. */
export function asSent(payload: Payload): Payload {
  if (!payload.meta || !BROKER_META_KEYS.some((key) => key in payload.meta!)) return payload;
  const meta = Object.fromEntries(Object.entries(payload.meta).filter(([key]) => !(BROKER_META_KEYS as readonly string[]).includes(key)));
  const { meta: _decorated, ...rest } = payload;
  return Object.keys(meta).length > 0 ? { ...rest, meta } : rest;
}

function preview(payload: Payload): string {
  return JSON.stringify(asSent(payload)).slice(0, 200);
}
