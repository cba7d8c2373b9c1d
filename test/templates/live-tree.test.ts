/**
 * The templates that survey a directory (basic, raw-node) on a tree that changes while they read it:
 * a repository with a test run writing its reports beside it. Busy suite runs met a file gone between
 * its listing and its reading twice — the basic template under `check`, the raw-node one under
 * `run --no-task-id-arg` from the repository root while Playwright wrote its results — and each
 * ended in an error. A file or directory that vanished is skipped; the survey still succeeds.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { createTestBroker, ROOT, settle } from '../helpers/core.js';

// Removed in afterAll, once the churn is gone (not by tempDir's afterEach, while it may still write).
const scratch = mkdtempSync(path.join(os.tmpdir(), 'bc-live-'));
const churnDir = path.join(scratch, 'tree');
mkdirSync(churnDir);
// Writes and removes 300 small files and a directory, over and over, until killed.
const churn = spawn(
  process.execPath,
  [
    '-e',
    `const fs = require('fs'), p = require('path'); const d = ${JSON.stringify(churnDir)};
     for (;;) {
       for (let i = 0; i < 300; i++) fs.writeFileSync(p.join(d, 'f' + i + '.txt'), 'x\\n'.repeat(50));
       fs.mkdirSync(p.join(d, 'sub'), { recursive: true }); fs.writeFileSync(p.join(d, 'sub', 'g.txt'), 'y\\n');
       for (let i = 0; i < 300; i++) fs.rmSync(p.join(d, 'f' + i + '.txt'), { force: true });
       fs.rmSync(p.join(d, 'sub'), { recursive: true, force: true });
     }`,
  ],
  { stdio: 'ignore' },
);
/** Stops the churn and waits for its exit. */
async function stopChurn(): Promise<void> {
  if (churn.exitCode !== null || churn.signalCode !== null) return;
  const exited = new Promise((resolve) => churn.once('exit', resolve));
  churn.kill('SIGKILL');
  await exited;
}
afterAll(async () => {
  await stopChurn();
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5 });
});

describe.each([
  ['basic', 'templates/basic/agent.ts'],
  ['raw-node', 'templates/raw-node/agent.mjs'],
])('the %s template on a live tree', (_name, agent) => {
  test('files and directories removed while it walks are skipped, and every survey succeeds', async () => {
    const { broker } = createTestBroker();
    const outcomes: string[] = [];
    for (let run = 0; run < 8; run++) {
      const task = broker.submit({ command: path.join(ROOT, agent), input: { path: churnDir } });
      const result = await settle(task.result);
      await task.finished;
      // "no files" is a fair outcome of a walk that found the tree empty at that moment, not a crash.
      outcomes.push(
        result.ok ? 'ok' : String(result.error.message).includes('no files under') ? 'ok (empty)' : String(result.error.message),
      );
    }
    expect(outcomes.filter((o) => !o.startsWith('ok'))).toEqual([]);
  }, 120_000);
});
