/**
 * Issue 48 §3, history at start: the journal's loader names the tasks whose `ended` line was long
 * enough to hold a big inline result, and only those are looked at to move such a result to its file
 * (a journal of an older version); the quick count of brackets before the nesting check keeps every
 * line it must keep and skips every line nested too deep.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { Journal, JOURNAL_FILE } from '../../src/broker/history/journal.js';
import { RESULTS_DIR } from '../../src/broker/history/results.js';
import { RESULT_INLINE_MAX_BYTES } from '../../src/model/task.js';
import { MAX_JSON_DEPTH } from '../../src/protocol/index.js';
import { createTestBroker, tempDir } from '../helpers/core.js';
import { captureLogger } from '../helpers/reliability.js';

const at = new Date().toISOString();

function idOf(n: number): string {
  return `0190f3c2-7a4b-7c1e-9d2a-${String(n).padStart(12, '0')}`;
}

/** An `ended` record as a broker writes it, with `data` as its result's data. */
function ended(n: number, data: unknown): string {
  const id = idOf(n);
  const task = {
    ...{ id, label: `task ${n}`, state: 'succeeded', command: 'agent', args: [], cwd: '/', attempt: 1, maxAttempts: 1 },
    ...{ createdAt: at, endedAt: at, counters: { malformed: 0, rejected: 0, ignored: 0 } },
    result: { task_id: id, status: 'success', data },
  };
  return JSON.stringify({ e: 'ended', id, at, task, spec: { command: 'agent', args: [], cwd: '/', label: `task ${n}` } });
}

function queued(n: number, input: unknown): string {
  const spec = { command: 'agent', args: [], cwd: '/', label: `task ${n}`, input };
  return JSON.stringify({ e: 'queued', id: idOf(n), at, spec, maxAttempts: 1 });
}

function journalDir(lines: string[]): string {
  const dir = path.join(tempDir(), 'data');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, JOURNAL_FILE), lines.join('\n') + '\n');
  return dir;
}

describe('journal load', () => {
  test('only tasks whose ended line is longer than the inline limit are named as possibly holding a big result', () => {
    // A multi-byte result: its line is over the limit in bytes while under it in characters.
    const wide = 'é'.repeat(RESULT_INLINE_MAX_BYTES / 2 + 10);
    const dir = journalDir([
      ended(1, 'small'),
      ended(2, 'x'.repeat(RESULT_INLINE_MAX_BYTES + 10)),
      ended(3, wide),
      queued(4, 'y'.repeat(RESULT_INLINE_MAX_BYTES + 10)),
      ended(5, 'z'.repeat(RESULT_INLINE_MAX_BYTES - 1000)),
    ]);
    const { entries, skippedLines, longResults } = new Journal(dir, captureLogger()).load();
    expect(skippedLines).toBe(0);
    expect(entries).toHaveLength(5);
    expect([...longResults].sort()).toEqual([idOf(2), idOf(3)]);
  });

  test('a big inline result of an older journal moves to its file at start; small ones stay inline', async () => {
    const big = 'x'.repeat(RESULT_INLINE_MAX_BYTES + 10);
    const dataDir = journalDir([ended(1, 'small'), ended(2, big), ended(3, 'z'.repeat(RESULT_INLINE_MAX_BYTES - 1000))]);
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    expect(broker.get(idOf(1))!.result?.data).toBe('small');
    expect(broker.get(idOf(3))!.resultSummary).toBeUndefined();
    const moved = broker.get(idOf(2))!;
    expect(moved.result).toBeUndefined();
    expect(moved.resultSummary?.bytes).toBeGreaterThan(RESULT_INLINE_MAX_BYTES);
    const file = path.join(dataDir, RESULTS_DIR, `${idOf(2)}.json`);
    expect(JSON.parse(readFileSync(file, 'utf8')).data).toBe(big);
    expect(broker.result(idOf(2))?.data).toBe(big);
    await broker.close();
    // The journal was compacted: the big result is no longer in it.
    expect(readFileSync(path.join(dataDir, JOURNAL_FILE), 'utf8').includes(big)).toBe(false);
    expect(existsSync(file)).toBe(true);
  });

  test('many brackets inside strings are kept; many nested ones are skipped as too deep', () => {
    const shallow = ended(1, { text: '['.repeat(MAX_JSON_DEPTH * 2), list: Array.from({ length: MAX_JSON_DEPTH * 2 }, () => ({})) });
    let deep: unknown = null;
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) deep = [deep];
    const logger = captureLogger();
    const dir = journalDir([shallow, ended(2, deep), ended(3, 'ok')]);
    const { entries, skippedLines } = new Journal(dir, logger).load();
    expect(entries.map((e) => e.snapshot.id)).toEqual([idOf(1), idOf(3)]);
    expect(skippedLines).toBe(1);
    expect(logger.at('warn').join('\n')).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });
});
