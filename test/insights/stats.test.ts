/** `backchannel stats` prints the broker's aggregates, from a history directory, as text, JSON or CSV. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { computeInsights, foldTasks } from '../../src/broker/history/insights.js';
import { parseWhen } from '../../src/cli/commands/stats.js';
import { ROOT, tempDir } from '../helpers/core.js';
import { writeJournal } from './generate.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

function stats(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BIN, 'stats', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function history(): { dir: string; expected: ReturnType<typeof computeInsights> } {
  const dir = tempDir();
  const tasks = writeJournal(dir, [
    { agent: 'a.mjs', model: 'm1', label: 'x', endedAt: '2026-11-02T10:00:00.000Z', durationMs: 100, tokens: { input: 7, output: 3 } },
    { agent: 'a.mjs', model: 'm2', label: 'x', endedAt: '2026-11-02T10:10:00.000Z', durationMs: 300, reason: 'timeout' },
    { agent: 'b.py', model: 'm1', label: 'y', endedAt: '2026-11-02T11:00:00.000Z', durationMs: 2500 },
  ]);
  return { dir, expected: computeInsights(foldTasks(tasks).values(), { by: 'agent' }) };
}

describe('backchannel stats', () => {
  test('--json prints the same figures the broker computes', () => {
    const { dir, expected } = history();
    const run = stats(['--json', '--data-dir', dir]);
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout);
    expect(printed.groups).toEqual(expected.groups);
    expect(printed.ab).toEqual(expected.ab);
  });

  test('the table shows each agent with its counts, success rate and percentiles', () => {
    const { dir } = history();
    const run = stats(['--data-dir', dir]);
    expect(run.code).toBe(0);
    const row = run.stdout.split('\n').find((line) => line.startsWith('a.mjs'))!;
    expect(row.split(/\s+/).slice(0, 6)).toEqual(['a.mjs', '2', '50.0', '100ms', '300ms', '300ms']);
    expect(run.stdout).toMatch(/^b\.py\s+1\s+100\.0\s+2\.5s/m);
    expect(run.stdout).toContain('A/B');
  });

  test('the documented command (--since 7d --by model) prints a row per model of the last week', () => {
    const dir = tempDir();
    writeJournal(dir, [{ agent: 'a.mjs', model: 'm1', endedAt: new Date(Date.now() - 3_600_000).toISOString(), durationMs: 5 }]);
    const run = stats(['--since', '7d', '--by', 'model', '--data-dir', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^model\s+tasks/);
    expect(run.stdout).toMatch(/^m1\s+1\s+100\.0/m);
  });

  test('--csv --by model prints one row per model', () => {
    const { dir } = history();
    const run = stats(['--csv', '--by', 'model', '--data-dir', dir]);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^model,tasks,success_rate,p50_ms/);
    expect(lines.slice(1).map((l) => l.split(',').slice(0, 3).join(','))).toEqual(['m1,2,1', 'm2,1,0']);
  });

  test('--since filters by end time; a bad value is a usage error', () => {
    const { dir } = history();
    const run = stats(['--json', '--since', '2026-11-02T11:00:00Z', '--data-dir', dir]);
    expect(JSON.parse(run.stdout).total.count).toBe(1);
    const bad = stats(['--since', 'last tuesday', '--data-dir', dir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since');
    expect(stats(['--help']).stdout).toContain('Usage: backchannel stats');
    expect(parseWhen('7d', Date.parse('2026-11-08T00:00:00Z'))).toBe('2026-11-01T00:00:00.000Z');
  });
});
