/**
 * Issue 23 item 13: journal lines that are valid JSON of the wrong shape — an `ended` without its
 * task, a `queued` without a spec, a spec whose args is a string and label a number, a snapshot with
 * a number for a label — are skipped with the one warning corrupt lines get. They stopped the broker
 * from starting (a TypeError in `ready`) or broke `tasks` and `show` for the whole history.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, makeBroker, tempDir } from '../helpers/core.js';
import { captureLogger } from '../helpers/reliability.js';
import { cli } from '../hub/control/hub-process.js';

const AT = '2026-11-30T10:00:00.000Z';
const id = (n: number): string => `01900000-0000-7000-8000-0000000bad${n.toString(16).padStart(2, '0')}`;
const WRONG_SHAPES = [
  { e: 'ended', id: id(1), at: AT },
  { e: 'queued', id: id(2), at: AT, maxAttempts: 1 },
  { e: 'queued', id: id(3), at: AT, spec: { command: 'node', args: 'agent.mjs', cwd: '/', label: 7 }, maxAttempts: 1 },
  {
    e: 'ended',
    id: id(4),
    at: AT,
    task: { id: id(4), label: 7, state: 'succeeded', command: 'node', args: [], cwd: '/', attempt: 1, maxAttempts: 1, createdAt: AT },
  },
  { e: 'attempt', id: id(5), at: AT, attempt: 'first' },
  { e: 'ended', id: id(6), at: AT, task: null },
];

describe('a journal with records of the wrong shape', () => {
  test('the broker starts with one warning and every good task; tasks and show work over that history without a hub', async () => {
    const dir = tempDir('bc-shape-');
    const dataDir = path.join(dir, 'state', 'backchannel');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const { broker: writer } = makeBroker({ dataDir });
    const good = writer.submit({ command: fixture('quick.mjs'), input: { n: 1 }, label: 'the good one' });
    await good.result;
    await writer.close();
    appendFileSync(path.join(dataDir, 'journal.ndjson'), WRONG_SHAPES.map((record) => JSON.stringify(record) + '\n').join(''));

    // Without a hub: the task commands read the history on disk.
    const env = { ...process.env, XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: '', CURSOR_IPC_DIR: path.join(dir, 'ipc') };
    delete env.BACKCHANNEL_CONTROL;
    const tasks = await cli(['tasks'], env);
    expect({ code: tasks.code, stderr: tasks.stderr }).toEqual({ code: 0, stderr: '' });
    expect(tasks.stdout).toMatch(new RegExp(`^ID.*\n${good.id}\\s+succeeded\\s+.*the good one\n$`));
    const shown = await cli(['show', good.id], env);
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    expect(shown.stdout).toMatch(/state\s+succeeded\n/);

    const logger = captureLogger();
    const { broker: reader } = makeBroker({ dataDir, logger });
    const warnings: string[] = [];
    reader.on('warning', (message) => warnings.push(message));
    await reader.ready;
    expect(warnings).toEqual([`history: skipped ${WRONG_SHAPES.length} corrupt journal line(s)`]);
    expect(logger.at('warn').filter((w) => w.includes('skipped a corrupt line'))).toHaveLength(WRONG_SHAPES.length);
    expect(reader.tasks().map((task) => [task.id, task.state])).toEqual([[good.id, 'succeeded']]);
    // New work still runs and is journalled.
    const fresh = reader.submit({ command: fixture('quick.mjs'), input: { n: 2 } });
    await expect(fresh.result).resolves.toMatchObject({ status: 'success' });
    await reader.close();
  });
});
