/**
 * Fault table, "durable history": the broker is SIGKILLed mid-task and restarted; the journal has
 * corrupt and truncated lines. Nothing the user was shown is lost.
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { BrokerHost } from '../helpers/broker-host.js';
import { fixture, leftovers, makeBroker, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { agentProcesses, captureLogger, expectNothingLeft, hostile } from '../helpers/reliability.js';

function journalRecords(dataDir: string): Array<{ e: string; id: string; [key: string]: unknown }> {
  try {
    return readFileSync(path.join(dataDir, 'journal.ndjson'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line) => {
        try {
          return [JSON.parse(line)];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}

function dirs() {
  const dir = tempDir();
  return { ipcDir: path.join(dir, 'ipc'), dataDir: path.join(dir, 'data') };
}

describe('broker crash and restart', () => {
  test('after SIGKILL and a restart, a running task is interrupted with its last progress, and an SDK agent’s spooled result is adopted', async () => {
    const { ipcDir, dataDir } = dirs();
    const first = await BrokerHost.start({ ipcDir, dataDir, concurrency: 2 });
    const waiting = await first.submit({ command: fixture('recovery/progress-then-wait.mjs') });
    const outliving = await first.submit({ command: fixture('recovery/outlives-broker.mjs') });
    // Both slots are taken: this one waits in the queue when the broker dies.
    const queued = await first.submit({ command: fixture('quick.mjs'), input: { n: 'queued' } });
    // Both progress records are in the journal (the kernel has them; SIGKILL cannot take them back).
    await waitFor(
      () => [waiting, outliving].every((id) => journalRecords(dataDir).some((r) => r.e === 'progress' && r.id === id)),
      'both progress records in the journal',
    );
    const agents = agentProcesses(ipcDir);
    expect(agents.length).toBeGreaterThanOrEqual(2);

    await first.kill();
    // The SDK agent notices its broker is gone, finishes its work and spools the result.
    await waitFor(() => existsSync(path.join(ipcDir, `${outliving}.json`)), 'the spool file');
    await waitUntilGone(agents, 15_000);
    const spooled = JSON.parse(readFileSync(path.join(ipcDir, `${outliving}.json`), 'utf8'));
    expect(spooled).toMatchObject({ task_id: outliving, status: 'success', data: { answer: 42 } });

    const second = await BrokerHost.start({ ipcDir, dataDir });
    const interrupted = await second.get(waiting);
    expect(interrupted).toMatchObject({
      state: 'interrupted',
      reason: 'crashed',
      message: 'the broker stopped while this task was running',
      progress: 42,
      lastPartial: { progress: 42, step: 'halfway through' },
      attempt: 1,
    });
    expect(interrupted?.pid).toBeUndefined();
    expect(await second.get(queued)).toMatchObject({
      state: 'interrupted',
      attempt: 0,
      message: 'the broker stopped before this task started',
    });
    const adopted = await second.get(outliving);
    expect(adopted).toMatchObject({
      state: 'succeeded',
      progress: 100,
      result: { status: 'success', data: { answer: 42, finishedAfterTheBrokerDied: true }, meta: { channel: 'spool' } },
    });
    expect((adopted?.result as { token?: string }).token).toBeUndefined();
    // Spool file adopted and removed (once its adoption is durable); the dead broker's socket files swept.
    await waitFor(() => leftovers(ipcDir).length === 0, 'the adopted spool file to be removed').catch(() => {});
    expect(leftovers(ipcDir)).toEqual([]);
    await second.close();

    // The adoption itself is durable: a third start sees the same.
    const { broker } = makeBroker({ dataDir });
    await broker.ready;
    expect(broker.get(outliving)).toMatchObject({ state: 'succeeded', result: { meta: { channel: 'spool' } } });
    expect(broker.get(waiting)).toMatchObject({ state: 'interrupted', progress: 42 });
    expect(agentProcesses(ipcDir)).toEqual([]);
  });
  test('a task submitted while the broker was still starting is not lost when the broker then dies', async () => {
    const { ipcDir, dataDir } = dirs();
    const first = await BrokerHost.start({ ipcDir, dataDir, early: [{ command: fixture('recovery/progress-then-wait.mjs') }] });
    const [early] = first.early;
    await waitFor(() => journalRecords(dataDir).some((r) => r.e === 'progress' && r.id === early), 'the progress record in the journal');
    expect(
      journalRecords(dataDir)
        .filter((r) => r.id === early)
        .map((r) => r.e),
      // The first `attempt` is made durable before the task shows as running; the second adds its pid.
    ).toEqual(['queued', 'attempt', 'attempt', 'progress']);
    const agents = agentProcesses(ipcDir);
    await first.kill();
    await waitUntilGone(agents, 15_000);
    const second = await BrokerHost.start({ ipcDir, dataDir });
    expect(await second.get(early!)).toMatchObject({ state: 'interrupted', progress: 42 });
    await second.close();
    await expectNothingLeft(ipcDir);
  });
});

describe('journal compaction', () => {
  test('compaction at start keeps the newest tasks and every record of a task submitted meanwhile', async () => {
    const { dataDir } = dirs();
    const { broker: first } = makeBroker({ dataDir, historyLimit: 3 });
    const old: string[] = [];
    for (let n = 0; n < 5; n++) {
      const task = first.submit({ command: fixture('quick.mjs'), input: { n } });
      await task.result;
      old.push(task.id);
    }
    await first.close();
    expect(new Set(journalRecords(dataDir).map((r) => r.id)).size).toBe(5);

    // Five tasks on file, three kept: this start compacts, while a task is already submitted.
    const { broker: second } = makeBroker({ dataDir, historyLimit: 3 });
    const early = second.submit({ command: fixture('quick.mjs'), input: { n: 'early' } });
    await early.result;
    await second.close();
    const records = journalRecords(dataDir);
    expect(
      records
        .filter((r) => r.id === early.id)
        .map((r) => r.e)
        .slice(0, 2),
    ).toEqual(['queued', 'attempt']);
    expect(records.some((r) => r.id === old[0])).toBe(false);
    expect(records.filter((r) => r.e === 'ended' && old.slice(2).includes(r.id))).toHaveLength(3);

    const { broker: third } = makeBroker({ dataDir, historyLimit: 3 });
    await third.ready;
    expect(third.get(early.id)).toMatchObject({ state: 'succeeded', result: { data: { n: 'early' } } });
  });
});

/** Finished task `n` of a journal written by a test: its id, time, spec and `ended` snapshot. */
function finishedTask(n: number, data: unknown) {
  const id = `0190f3c2-7a4b-7c1e-9d2a-${String(n).padStart(12, '0')}`;
  const at = new Date(Date.UTC(2026, 10, 1, 0, 0, n)).toISOString();
  const spec = { command: 'agent', args: [], cwd: '/', label: `task ${n}` };
  const task = {
    id,
    label: spec.label,
    state: 'succeeded',
    command: 'agent',
    args: [],
    cwd: '/',
    attempt: 1,
    maxAttempts: 1,
    createdAt: at,
    endedAt: at,
    counters: { malformed: 0, rejected: 0, ignored: 0 },
    result: { task_id: id, status: 'success', data },
  };
  return { id, at, spec, task };
}

describe('an ended task stays ended', () => {
  test("an agent's pid journalled after its task's ending (the spawner thread late, the agent fast) does not reopen it", async () => {
    const { dataDir } = dirs();
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const journal = path.join(dataDir, 'journal.ndjson');
    const { id, at, spec, task } = finishedTask(7, { n: 7 });
    const failed = { ...task, state: 'failed', reason: 'error', message: 'planned failure 7', result: undefined };
    const lines = [
      { e: 'queued', id, at, spec, maxAttempts: 1 },
      { e: 'attempt', id, at, attempt: 1 },
      { e: 'ended', id, at, task: failed },
      // What a loaded machine wrote (test/reliability/load.test.ts beside two CPU spinners): the pid last.
      { e: 'attempt', id, at, attempt: 1, pid: 999_999, pidStart: '1' },
      { e: 'exited', id, at, exitCode: 1, signal: null },
    ];
    writeFileSync(journal, lines.map((l) => JSON.stringify(l)).join('\n') + '\n', { mode: 0o600 });
    const { broker } = makeBroker({ dataDir });
    await broker.ready;
    expect(broker.get(id)).toMatchObject({ state: 'failed', reason: 'error', message: 'planned failure 7' });
    await broker.close();
  });
});

describe('journal size', () => {
  test('a journal over 16 MiB is compacted at start, keeping every task', async () => {
    const { dataDir } = dirs();
    mkdirSync(dataDir, { recursive: true });
    const journal = path.join(dataDir, 'journal.ndjson');
    const filler = 'p'.repeat(4000);
    const lines: string[] = [];
    for (let n = 0; n < 200; n++) {
      const { id, at, spec, task } = finishedTask(n, { n });
      lines.push(JSON.stringify({ e: 'queued', id, at, spec, maxAttempts: 1 }));
      lines.push(JSON.stringify({ e: 'attempt', id, at, attempt: 1 }));
      // A chatty task: many throttled progress records, each with a (clipped) partial.
      for (let p = 0; p < 22; p++) lines.push(JSON.stringify({ e: 'progress', id, at, progress: p, partial: { filler } }));
      lines.push(JSON.stringify({ e: 'ended', id, at, task: { ...task, progress: 100 } }));
    }
    writeFileSync(journal, lines.join('\n') + '\n');
    const sizeBefore = statSync(journal).size;
    expect(sizeBefore).toBeGreaterThan(16 * 1024 * 1024);

    const { broker } = makeBroker({ dataDir });
    await broker.ready;
    expect(statSync(journal).size).toBeLessThan(sizeBefore / 10);
    expect(broker.tasks()).toHaveLength(200);
    expect(broker.get('0190f3c2-7a4b-7c1e-9d2a-000000000123')).toMatchObject({ state: 'succeeded', result: { data: { n: 123 } } });
    const fresh = broker.submit({ command: fixture('quick.mjs'), input: { n: 'after' } });
    await fresh.result;
    await broker.close();
    const { broker: again } = makeBroker({ dataDir });
    await again.ready;
    expect(again.tasks()).toHaveLength(201);
  });

  test('a journal over 16 MiB that is already compact (one record per task) is not rewritten at start', async () => {
    const { dataDir } = dirs();
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const journal = path.join(dataDir, 'journal.ndjson');
    const text = 't'.repeat(9000);
    const lines: string[] = [];
    for (let n = 0; n < 2000; n++) {
      const { id, at, spec, task } = finishedTask(n, { n, text });
      lines.push(JSON.stringify({ e: 'ended', id, at, task, spec }));
    }
    writeFileSync(journal, lines.join('\n') + '\n', { mode: 0o600 });
    const before = statSync(journal);
    expect(before.size).toBeGreaterThan(16 * 1024 * 1024);

    const { broker } = makeBroker({ dataDir, historyLimit: 5000 });
    await broker.ready;
    expect(broker.tasks()).toHaveLength(2000);
    await broker.close();
    // The same file (a compaction writes a new one and renames it over this one), not a byte more.
    expect(statSync(journal)).toMatchObject({ ino: before.ino, size: before.size });
  });

  test('progress is journalled at most about once a second per task, however often it comes', async () => {
    const root = tempDir();
    const ipcDir = path.join(root, 'ipc');
    const dataDir = path.join(root, 'data');
    const host = await BrokerHost.start({ ipcDir, dataDir });
    const started = Date.now();
    const id = await host.submit({ command: hostile('flood.mjs'), input: { ms: 2500 } });
    const outcome = await host.result(id);
    const seconds = (Date.now() - started) / 1000;
    expect((outcome.payload!.data as { sent: number }).sent).toBeGreaterThan(1000);
    await host.close();
    const progress = journalRecords(dataDir).filter((r) => r.e === 'progress' && r.id === id);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.length).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
  });
});

describe('spool files while the broker lives', () => {
  test('a result spooled because the ack came late is not left behind', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('recovery/spools-anyway.mjs'), args: ['also-socket'] });
    expect(await task.result).toMatchObject({ data: { via: 'also-socket' }, meta: { channel: 'socket' } });
    await task.finished;
    await expectNothingLeft(ipcDir);
  });

  test('a result that reached only the spool file is taken from it when the agent exits', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('recovery/spools-anyway.mjs'), args: ['only-spool'] });
    expect(await task.result).toMatchObject({ data: { via: 'only-spool' }, meta: { channel: 'spool' } });
    await task.finished;
    await expectNothingLeft(ipcDir);
  });
});

describe('an agent that outlives its broker by longer than the restart', () => {
  test('its task shows running (recovering), cannot be retried, and ends once with the result it spooled after the restart', async () => {
    const { ipcDir, dataDir } = dirs();
    const release = path.join(path.dirname(ipcDir), 'release');
    const first = await BrokerHost.start({ ipcDir, dataDir });
    const id = await first.submit({ command: fixture('recovery/finishes-later.mjs'), args: [release] });
    await waitFor(() => journalRecords(dataDir).some((r) => r.e === 'progress' && r.id === id), 'the progress record in the journal');
    const agents = agentProcesses(ipcDir);
    await first.kill();

    const second = await BrokerHost.start({ ipcDir, dataDir });
    const recovering = await second.get(id);
    expect(recovering).toMatchObject({ state: 'running', recovering: true, progress: 20, pid: agents[0] });
    expect(recovering?.endedAt).toBeUndefined();
    // Retry would run the work a second time beside the first: refused, with what to do instead.
    await expect(second.call('retry', { id })).rejects.toThrow(/still running \(its agent outlived the hub's restart\); cancel it first/);
    writeFileSync(release, '');
    await waitUntilGone(agents, 15_000);
    const adopted = await waitFor(
      async () => {
        const snapshot = await second.get(id);
        return snapshot?.state !== 'running' && snapshot;
      },
      'the spooled result to be adopted',
      15_000,
      50,
    );
    expect(adopted).toMatchObject({ state: 'succeeded', result: { data: { answer: 'late but whole' }, meta: { channel: 'spool' } } });
    expect(adopted).not.toHaveProperty('recovering');
    expect(adopted).not.toHaveProperty('pid');
    // One `ended`, and whoever read the task at it (a webhook does) read the outcome, never a stale state.
    expect((await second.stats()).endedAs[id]).toEqual(['succeeded']);
    await second.close();
    await waitFor(() => leftovers(ipcDir).length === 0, 'the adopted spool file to be removed').catch(() => {});
    expect(leftovers(ipcDir)).toEqual([]);
    const { broker } = makeBroker({ dataDir });
    await broker.ready;
    expect(broker.get(id)).toMatchObject({ state: 'succeeded' });
  });

  test('a recovering task stays recovering across a second crash, also when the restart compacted the journal', async () => {
    const { ipcDir, dataDir } = dirs();
    const release = path.join(path.dirname(ipcDir), 'release');
    const first = await BrokerHost.start({ ipcDir, dataDir });
    const done = await first.submit({ command: fixture('quick.mjs') });
    await first.result(done);
    const id = await first.submit({ command: fixture('recovery/finishes-later.mjs'), args: [release] });
    await waitFor(() => journalRecords(dataDir).some((r) => r.e === 'progress' && r.id === id), 'the progress record in the journal');
    await first.kill();
    // Keeping one task, the restart drops the older one and compacts the journal: no `attempt` record is left but ours.
    const second = await BrokerHost.start({ ipcDir, dataDir, historyLimit: 1 });
    expect(await second.get(id)).toMatchObject({ state: 'running', recovering: true });
    expect(journalRecords(dataDir).filter((r) => r.id === done)).toEqual([]);
    await second.kill();
    const third = await BrokerHost.start({ ipcDir, dataDir, historyLimit: 1 });
    expect(await third.get(id)).toMatchObject({ state: 'running', recovering: true });
    writeFileSync(release, '');
    const ended = await waitFor(
      async () => {
        const snapshot = await third.get(id);
        return snapshot?.state !== 'running' && snapshot;
      },
      'the spooled result to be adopted',
      15_000,
      50,
    );
    expect(ended).toMatchObject({ state: 'succeeded', result: { data: { answer: 'late but whole' } } });
    await third.close();
  });

  // Kill-points seed 1038728951: an agent of the killed hub was still writing its 10 MB result to the
  // spool when the restarted hub adopted spool files; it read half a file, removed it as unreadable,
  // and failed the task as leaving no result when the agent ended. An agent of another SDK may write
  // its spool file in place: an unreadable one is read again once its agent is gone.
  test('a spool file still being written by its live agent at the restart is read once that agent is gone', async () => {
    const { ipcDir, dataDir } = dirs();
    const never = path.join(path.dirname(ipcDir), 'never');
    const first = await BrokerHost.start({ ipcDir, dataDir });
    const id = await first.submit({ command: fixture('recovery/finishes-later.mjs'), args: [never] });
    await waitFor(() => journalRecords(dataDir).some((r) => r.e === 'progress' && r.id === id), 'the progress record in the journal');
    const [agent] = agentProcesses(ipcDir);
    await first.kill();
    // The agent's write in place, as a non-atomic writer does it: half of it before the restart, the rest after.
    const line = `${JSON.stringify({ task_id: id, status: 'success', data: { answer: 'written while the hub restarted' } })}\n`;
    const fd = openSync(path.join(ipcDir, `${id}.json`), 'w', 0o600);
    writeSync(fd, line.slice(0, 40));
    const second = await BrokerHost.start({ ipcDir, dataDir });
    try {
      expect(await second.get(id)).toMatchObject({ state: 'running', recovering: true });
      writeSync(fd, line.slice(40));
    } finally {
      closeSync(fd);
    }
    process.kill(agent!, 'SIGKILL');
    const ended = await waitFor(
      async () => {
        const snapshot = await second.get(id);
        return snapshot?.state !== 'running' && snapshot;
      },
      'the recovering task to end',
      15_000,
      50,
    );
    expect(ended).toMatchObject({ state: 'succeeded', result: { data: { answer: 'written while the hub restarted' } } });
    await second.close();
    await waitFor(() => leftovers(ipcDir).length === 0, 'the adopted spool file to be removed').catch(() => {});
    expect(leftovers(ipcDir)).toEqual([]);
  });

  test('a recovering task whose agent dies without a result fails once as crashed; a cancelled one ends cancelled', async () => {
    const { ipcDir, dataDir } = dirs();
    const never = path.join(path.dirname(ipcDir), 'never');
    const first = await BrokerHost.start({ ipcDir, dataDir });
    const dies = await first.submit({ command: fixture('recovery/finishes-later.mjs'), args: [never] });
    const cancelled = await first.submit({ command: fixture('recovery/finishes-later.mjs'), args: [never] });
    await waitFor(
      () => [dies, cancelled].every((id) => journalRecords(dataDir).some((r) => r.e === 'progress' && r.id === id)),
      'both progress records in the journal',
    );
    await first.kill();
    const second = await BrokerHost.start({ ipcDir, dataDir });
    const [killed, stopped] = [(await second.get(dies))!, (await second.get(cancelled))!];
    expect([killed.state, stopped.state]).toEqual(['running', 'running']);
    process.kill(killed.pid!, 'SIGKILL');
    expect(await second.call('cancel', { id: cancelled, reason: 'cancelled by the user' })).toBe(true);
    const ended = await waitFor(
      async () => {
        const both = [(await second.get(dies))!, (await second.get(cancelled))!];
        return both.every((task) => task.state !== 'running') && both;
      },
      'both recovering tasks to end',
      15_000,
      50,
    );
    expect(ended[0]).toMatchObject({
      state: 'failed',
      reason: 'crashed',
      message: 'its agent ended after the hub restarted and left no result',
    });
    expect(ended[1]).toMatchObject({ state: 'cancelled', reason: 'cancelled', message: 'cancelled by the user' });
    const { endedAs } = await second.stats();
    expect([endedAs[dies], endedAs[cancelled]]).toEqual([['failed'], ['cancelled']]);
    await second.close();
  });
});

describe('a damaged journal', () => {
  test('corrupt and truncated lines are skipped with a warning; the rest loads, and new records stay readable', async () => {
    const { dataDir } = dirs();
    const journal = path.join(dataDir, 'journal.ndjson');
    const { broker: writer } = makeBroker({ dataDir });
    const ids = [];
    for (const n of [1, 2, 3]) {
      const task = writer.submit({ command: fixture('quick.mjs'), input: { n } });
      await task.result;
      ids.push(task.id);
    }
    await writer.close();

    // A line of garbage in the middle, a line with a record of the wrong shape, and a last line cut
    // short by power loss (no newline).
    const lines = readFileSync(journal, 'utf8').split('\n').filter(Boolean);
    lines.splice(2, 0, '\u0000\u0000\u0000 garbage from a bad sector', '[1,2,3]');
    writeFileSync(journal, lines.join('\n') + '\n');
    appendFileSync(journal, '{"e":"ended","id":"0190f3c2-7a4b-7c1e-9d2a-1b2c3d4e5f60","at":"2026-11-30T0');

    const logger = captureLogger();
    const { broker: reader, ipcDir } = makeBroker({ dataDir, logger });
    const warnings: string[] = [];
    reader.on('warning', (message) => warnings.push(message));
    await reader.ready;
    expect(warnings).toEqual(['history: skipped 3 corrupt journal line(s)']);
    expect(logger.at('warn').filter((w) => w.includes('skipped a corrupt line'))).toHaveLength(3);
    for (const id of ids) expect(reader.get(id)).toMatchObject({ state: 'succeeded' });

    // The broker appends after the cut line: the new record must not be glued onto it.
    const fresh = reader.submit({ command: fixture('quick.mjs'), input: { n: 4 } });
    await fresh.result;
    await reader.close();
    const freshRecords = journalRecords(dataDir)
      .filter((r) => r.id === fresh.id)
      .map((r) => r.e);
    expect(freshRecords.slice(0, 2)).toEqual(['queued', 'attempt']);
    expect(freshRecords).toContain('ended');
    const { broker: again } = makeBroker({ dataDir });
    const later: string[] = [];
    again.on('warning', (message) => later.push(message));
    await again.ready;
    expect(later).toEqual(['history: skipped 3 corrupt journal line(s)']);
    expect(again.get(fresh.id)).toMatchObject({ state: 'succeeded', result: { data: { n: 4 } } });
    for (const id of ids) expect(again.get(id)).toMatchObject({ state: 'succeeded' });
    await expectNothingLeft(ipcDir);
  });
});
