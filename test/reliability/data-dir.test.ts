/**
 * Fault table, issue 12 item 6: the history/log data directory is trusted only when it is ours alone,
 * its files are never opened through a symlink, and Retry runs exactly what the panel shows.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeBroker, settle, tempDir } from '../helpers/core.js';
import { captureLogger } from '../helpers/reliability.js';

const noRunuser = spawnSync('runuser', ['--help']).error
  ? 'runuser is not installed'
  : process.getuid?.() !== 0
    ? 'acting as nobody needs root'
    : undefined;

/** A journal whose `ended` snapshot shows an innocent command while its `queued` spec runs `marker`. */
function forgedJournal(marker: string): string {
  const id = '01900000-0000-7000-8000-000000000001';
  const at = new Date().toISOString();
  const hidden = { command: 'sh', args: ['-c', `id > ${marker}`], cwd: '/', label: 'echo hello' };
  const shown = {
    id,
    label: 'echo hello',
    state: 'succeeded',
    command: 'echo',
    args: ['hello'],
    cwd: '/',
    attempt: 1,
    maxAttempts: 1,
    createdAt: at,
    endedAt: at,
    counters: { malformed: 0, rejected: 0, ignored: 0 },
  };
  return [
    JSON.stringify({ e: 'queued', id, at, spec: hidden, maxAttempts: 1 }),
    JSON.stringify({ e: 'ended', id, at, task: shown }),
    '',
  ].join('\n');
}

describe('the data directory', () => {
  test.skipIf(noRunuser)(
    `a data directory made by another user (nobody), holding a forged journal, is refused: every task fails and nothing runs${noRunuser ? ` (skipped: ${noRunuser})` : ''}`,
    async () => {
      const shared = tempDir();
      chmodSync(shared, 0o1777);
      const dataDir = path.join(shared, 'data');
      const marker = path.join(shared, 'marker');
      const script = `mkdir -m 777 ${dataDir} && cat > ${dataDir}/journal.ndjson`;
      const made = spawnSync('runuser', ['-u', 'nobody', '--', 'sh', '-c', script], { input: forgedJournal(marker) });
      expect(made.status).toBe(0);
      const { broker } = makeBroker({ dataDir });
      const started = await settle(broker.ready);
      expect(started).toMatchObject({ ok: false, error: { message: expect.stringMatching(/belongs to uid 65534/) } });
      expect(broker.tasks()).toEqual([]);
      const task = broker.submit({ command: 'true' });
      expect(await settle(task.result)).toMatchObject({
        ok: false,
        error: { reason: 'crashed', message: expect.stringMatching(/could not start/) },
      });
      expect(existsSync(marker)).toBe(false);
    },
  );

  test('Retry of a history entry runs the command the panel shows, never a different stored spec', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const marker = path.join(root, 'marker');
    writeFileSync(path.join(dataDir, 'journal.ndjson'), forgedJournal(marker));
    const { broker } = makeBroker({ dataDir });
    await broker.ready;
    const [shown] = broker.tasks();
    expect(shown).toMatchObject({ command: 'echo', args: ['hello'] });
    const again = broker.retry(shown!.id);
    await settle(again.result);
    await again.finished;
    expect(again.snapshot()).toMatchObject({ command: 'echo', args: ['hello'] });
    expect(existsSync(marker)).toBe(false);
  });

  test('symlinks named like the journal or its temp file are never written through', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const victim = path.join(root, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, path.join(dataDir, 'journal.ndjson'));
    // The old temp names were journal.ndjson.<pid>.tmp: plant the next few pids.
    for (let pid = process.pid; pid < process.pid + 50; pid++) symlinkSync(victim, path.join(dataDir, `journal.ndjson.${pid}.tmp`));
    const logger = captureLogger();
    const { broker } = makeBroker({ dataDir, logger, historyLimit: 1 });
    await broker.ready;
    const task = broker.submit({ command: 'true' });
    await settle(task.result);
    await task.finished;
    await broker.close();
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(broker.historyError).toMatch(/cannot be written/);

    // A real journal that needs compaction (more tasks than historyLimit): the temp file is new and unguessable.
    const second = path.join(root, 'second');
    mkdirSync(second, { mode: 0o700 });
    const journal = [1, 2, 3].map((n) => forgedJournal(path.join(root, `m${n}`)).replace(/0001"/g, `000${n}"`)).join('');
    writeFileSync(path.join(second, 'journal.ndjson'), journal);
    for (let pid = process.pid; pid < process.pid + 50; pid++) symlinkSync(victim, path.join(second, `journal.ndjson.${pid}.tmp`));
    const { broker: compacting } = makeBroker({ dataDir: second, historyLimit: 1 });
    await compacting.ready;
    expect(compacting.tasks()).toHaveLength(1);
    expect(compacting.historyError).toBeUndefined();
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });
});
