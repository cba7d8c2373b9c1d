import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { agentOf, computeInsights, foldTasks, percentile } from '../../src/broker/history/insights.js';
import { ROLLUP_FILE } from '../../src/broker/history/rollup.js';
import { makeBroker, tempDir } from '../helpers/core.js';
import { snapshotOf, writeJournal, type GeneratedTask } from './generate.js';

const H10 = '2026-11-02T10:';
const H11 = '2026-11-02T11:';

/** Twelve tasks whose figures are worked out by hand below. */
const TASKS: GeneratedTask[] = [
  {
    agent: 'summarise.mjs',
    model: 'gpt-a',
    label: 'summary',
    endedAt: `${H10}05:00.000Z`,
    durationMs: 100,
    tokens: { input: 10, output: 1 },
  },
  {
    agent: 'summarise.mjs',
    model: 'gpt-a',
    label: 'summary',
    endedAt: `${H10}10:00.000Z`,
    durationMs: 200,
    tokens: { input: 20, output: 2 },
  },
  {
    agent: 'summarise.mjs',
    model: 'gpt-a',
    label: 'summary',
    endedAt: `${H10}15:00.000Z`,
    durationMs: 300,
    tokens: { input: 30, output: 3 },
  },
  { agent: 'summarise.mjs', model: 'gpt-a', label: 'summary', endedAt: `${H11}05:00.000Z`, durationMs: 400, reason: 'timeout' },
  {
    agent: 'summarise.mjs',
    model: 'gpt-b',
    label: 'summary',
    endedAt: `${H11}10:00.000Z`,
    durationMs: 1000,
    tokens: { input: 5, output: 5 },
  },
  { agent: 'summarise.mjs', model: 'gpt-b', label: 'summary', endedAt: `${H11}20:00.000Z`, durationMs: 3000, reason: 'error' },
  { agent: 'review.py', model: 'gpt-a', label: 'review', endedAt: `${H10}30:00.000Z`, durationMs: 50 },
  { agent: 'review.py', model: 'gpt-a', label: 'review', endedAt: `${H10}31:00.000Z`, durationMs: 60, reason: 'stalled' },
  { agent: 'review.py', label: 'review', endedAt: `${H11}30:00.000Z`, durationMs: 70, reason: 'crashed' },
  { agent: 'review.py', label: 'review', endedAt: `${H11}31:00.000Z`, durationMs: 80, reason: 'cancelled' },
  { agent: 'review.py', label: 'review', endedAt: `${H11}32:00.000Z`, durationMs: 90, reason: 'protocol' },
  { agent: 'review.py', label: 'review', endedAt: `${H11}33:00.000Z`, durationMs: 10 },
];

describe('insights aggregates', () => {
  test('nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 95)).toBe(95);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });

  test('the agent is the template, else the script a runtime runs, else the command', () => {
    expect(agentOf({ command: 'node', args: ['--import', 'x', '/a/agent.mjs'], tags: { template: 'basic' } })).toBe('basic');
    expect(agentOf({ command: '/usr/bin/python3', args: ['-u', '/a/agent.py', '--task-id=1'] })).toBe('agent.py');
    expect(agentOf({ command: '/opt/bin/my-agent', args: ['x'] })).toBe('my-agent');
    // Inline code is not a script name: the runtime and its option name the agent.
    expect(agentOf({ command: 'node', args: ['-e', 'console.log("a long script")', '--task-id=1'] })).toBe('node -e');
    expect(agentOf({ command: 'python3', args: ['-u', '-c', 'print(1)'] })).toBe('python3 -c');
    expect(agentOf({ command: 'python3', args: ['-m', 'my_agent', '--task-id=1'] })).toBe('my_agent');
    expect(agentOf({ command: 'node', args: ['--import', 'tsx', '/a/agent.ts'] })).toBe('agent.ts');
    expect(agentOf({ command: 'node', args: ['--inspect'] })).toBe('node');
  });

  test('figures computed from a generated journal match hand-computed values', () => {
    const insights = computeInsights(foldTasks(TASKS.map(snapshotOf)).values());
    const summarise = insights.groups.find((g) => g.key === 'summarise.mjs')!;
    // durations 100 200 300 400 1000 3000: p50 = 3rd = 300, p95 = p99 = 6th = 3000
    expect(summarise).toMatchObject({ count: 6, p50: 300, p95: 3000, p99: 3000, tokensIn: 65, tokensOut: 11 });
    expect(summarise.successRate).toBeCloseTo(4 / 6);
    expect(summarise.outcomes).toMatchObject({ success: 4, timeout: 1, error: 1, stalled: 0 });
    expect(summarise.tokensPerTask).toBeCloseTo(76 / 6);
    const review = insights.groups.find((g) => g.key === 'review.py')!;
    // durations 10 50 60 70 80 90: p50 = 3rd = 60
    expect(review).toMatchObject({ count: 6, p50: 60, p95: 90, tokensIn: 0 });
    expect(review.outcomes).toEqual({
      success: 2,
      error: 0,
      timeout: 0,
      stalled: 1,
      crashed: 1,
      cancelled: 1,
      protocol: 1,
      refused: 0,
      budget_exceeded: 0,
    });
    expect(insights.total.count).toBe(12);
    expect(insights.hours).toEqual([`${H10}00:00.000Z`, `${H11}00:00.000Z`]);
    // Heatmap: p95 per agent and hour. review.py 10h: 50 60 → 60; 11h: 70 80 90 10 → 90.
    expect(insights.heatmap.agents).toEqual(['review.py', 'summarise.mjs']);
    expect(insights.heatmap.p95).toEqual([
      [60, 90],
      [300, 3000],
    ]);
    const s = insights.series.find((x) => x.key === 'summarise.mjs')!;
    expect(s.count).toEqual([3, 3]);
    expect(s.tokensIn).toEqual([60, 5]);
  });

  test('by model, filters, the A/B table and the tasks behind a point', () => {
    const snapshots = TASKS.map(snapshotOf);
    const byModel = computeInsights(foldTasks(snapshots).values(), { by: 'model' });
    expect(byModel.groups.map((g) => [g.key, g.count])).toEqual([
      ['gpt-a', 6],
      ['(none)', 4],
      ['gpt-b', 2],
    ]);
    // A/B on label "summary": gpt-a (4 tasks, 3 ok, durations 100..400) against gpt-b (2 tasks).
    const ab = byModel.ab.filter((row) => row.label === 'summary');
    expect(ab.map((row) => [row.figures.key, row.figures.count, row.figures.successRate, row.figures.p50])).toEqual([
      ['gpt-a', 4, 0.75, 200],
      ['gpt-b', 2, 0.5, 1000],
    ]);
    // "review" ran with gpt-a and without a reported model (crashes): that is not an A/B of two models.
    expect(byModel.ab.filter((row) => row.label === 'review')).toEqual([]);
    expect(byModel.ab.map((row) => row.figures.key)).not.toContain('(none)');
    const filtered = computeInsights(foldTasks(snapshots).values(), { model: 'gpt-a', since: `${H11}00:00.000Z` });
    expect(filtered.total.count).toBe(1);
    const picked = computeInsights(foldTasks(snapshots).values(), { pick: { hour: `${H10}00:00.000Z`, key: 'review.py' } });
    expect(picked.taskIds?.sort()).toEqual([snapshots[6]!.id, snapshots[7]!.id].sort());
  });

  test('aggregates survive journal compaction and retention by count, each task counted once', async () => {
    const dataDir = tempDir();
    writeJournal(dataDir, TASKS);
    const { broker: first } = makeBroker({ dataDir, historyLimit: 4 });
    await first.ready;
    expect(first.tasks()).toHaveLength(4);
    const after = first.insights();
    expect(after.total.count).toBe(12);
    expect(after.archived).toBe(8);
    expect(after.groups.find((g) => g.key === 'summarise.mjs')).toMatchObject({ count: 6, p50: 300, tokensIn: 65 });
    await first.close();
    // The journal now holds 4 tasks; the rollup the other 8, and no pending ids.
    expect(readFileSync(path.join(dataDir, 'journal.ndjson'), 'utf8').trim().split('\n')).toHaveLength(4);
    expect(JSON.parse(readFileSync(path.join(dataDir, ROLLUP_FILE), 'utf8')).pending).toEqual([]);
    const { broker: second } = makeBroker({ dataDir, historyLimit: 4 });
    await second.ready;
    expect(second.insights().total.count).toBe(12);
  });

  test("the bridge guard's counts are summed over the query's tasks and survive retention into the aggregates", async () => {
    const dataDir = tempDir();
    const guarded: GeneratedTask[] = [
      {
        agent: 'claude-code',
        label: 'bridged',
        endedAt: `${H10}01:00.000Z`,
        durationMs: 5,
        guard: { violations: 4, corrections: 3, unknown_tools: 1 },
      },
      {
        agent: 'claude-code',
        label: 'bridged',
        endedAt: `${H11}01:00.000Z`,
        durationMs: 5,
        guard: { violations: 1, corrections: 1, unknown_tools: 0 },
      },
    ];
    writeJournal(dataDir, [...guarded, ...TASKS]);
    const { broker: first } = makeBroker({ dataDir, historyLimit: 4 });
    await first.ready;
    expect(first.insights().archived).toBe(10);
    expect(first.insights().bridgeGuard).toEqual({ violations: 5, corrections: 4, unknown_tools: 1, replays: 0 });
    expect(first.insights({ since: `${H11}00:00.000Z` }).bridgeGuard).toEqual({
      violations: 1,
      corrections: 1,
      unknown_tools: 0,
      replays: 0,
    });
    expect(first.insights({ agent: 'review.py' }).bridgeGuard).toBeUndefined();
    await first.close();
    const { broker: second } = makeBroker({ dataDir, historyLimit: 4 });
    await second.ready;
    expect(second.insights().bridgeGuard).toEqual({ violations: 5, corrections: 4, unknown_tools: 1, replays: 0 });
  });

  test('retention by age moves old tasks out of history and into the aggregates', async () => {
    const dataDir = tempDir();
    const recent = new Date(Date.now() - 60_000).toISOString();
    writeJournal(dataDir, [...TASKS, { agent: 'fresh.mjs', endedAt: recent, durationMs: 5 }]);
    const { broker } = makeBroker({ dataDir, historyMaxAgeMs: 24 * 3600_000 });
    await broker.ready;
    expect(broker.tasks().map((t) => t.label)).toEqual(['fresh.mjs']);
    expect(broker.insights().total.count).toBe(13);
    expect(existsSync(path.join(dataDir, ROLLUP_FILE))).toBe(true);
  });

  test('a crash between writing the rollup and compacting the journal counts nothing twice', async () => {
    const dataDir = tempDir();
    const snapshots = writeJournal(dataDir, TASKS);
    // As if the last broker folded 8 evicted tasks and died before the journal was compacted.
    const { Rollup } = await import('../../src/broker/history/rollup.js');
    const rollup = new Rollup();
    rollup.open(dataDir);
    rollup.fold(snapshots.slice(0, 8));
    const { broker } = makeBroker({ dataDir, historyLimit: 4 });
    await broker.ready;
    expect(broker.insights().total.count).toBe(12);
  });

  test('100,000 tasks of history aggregate into a small answer, in linear time', () => {
    const start = Date.parse('2026-10-01T00:00:00.000Z');
    const tasks = Array.from({ length: 100_000 }, (_, i) =>
      snapshotOf({
        agent: `agent-${i % 7}.mjs`,
        model: `model-${i % 3}`,
        endedAt: new Date(start + i * 30_000).toISOString(),
        durationMs: (i * 37) % 5000,
        tokens: { input: i % 100, output: i % 10 },
        ...(i % 10 === 0 ? { reason: 'error' as const } : {}),
      }),
    );
    const began = performance.now();
    const buckets = foldTasks(tasks);
    const insights = computeInsights(buckets.values(), { by: 'agent' });
    const ms = performance.now() - began;
    expect(insights.total.count).toBe(100_000);
    expect(insights.total.outcomes.error).toBe(10_000);
    // What the panel receives is per hour and agent, not per task.
    expect(JSON.stringify({ ...insights, query: {} }).length).toBeLessThan(2_000_000);
    // About 0.9 s on a quiet 2-core machine (docs/insights.md). The bound only catches a quadratic
    // regression (minutes at this size), not a slow machine running other tests at the same time.
    expect(ms).toBeLessThan(15_000);
  });
});
