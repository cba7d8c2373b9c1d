/**
 * docs/schedules.md's tables are the code's vocabulary, exactly: the outcome table lists every fire
 * outcome and the skip-reason table every SKIP_REASONS entry, no more and in the code's order.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { SKIP_REASONS, fireRecordSchema } from '../../src/schedules/schedule.js';
import { ROOT } from '../helpers/core.js';

const DOC = fs.readFileSync(path.join(ROOT, 'docs', 'schedules.md'), 'utf8');

/** The first column of the table whose header row starts with `| <header> |`, unquoted. */
function firstColumn(header: string): string[] {
  const lines = DOC.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${header} |`));
  expect(start, `a table headed "${header}" in docs/schedules.md`).toBeGreaterThanOrEqual(0);
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|')[1]!.trim().replace(/^`|`$/g, ''));
  }
  return rows;
}

test('the skip-reason table lists exactly SKIP_REASONS, in order', () => {
  expect(firstColumn('reason')).toEqual([...SKIP_REASONS]);
});

test('the outcome table lists exactly the outcomes a fire record can have, in order', () => {
  expect(firstColumn('outcome')).toEqual(fireRecordSchema.shape.outcome.options);
});
