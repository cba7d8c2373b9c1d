import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeBroker, tempDir } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { acpCase, script } from './acp-helpers.js';

const allowEdits = { approvals: { edit: 'allow' } };

describe("fs/* are confined to the task's directory and bounded", () => {
  test('reads inside work; reads and writes outside, through "..", through a symlink out, and oversize are refused', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const outside = tempDir('bc-acp-outside-');
    writeFileSync(path.join(outside, 'secret.txt'), 'top secret');
    writeFileSync(path.join(acp.cwd, 'inside.txt'), 'line1\nline2\n');
    mkdirSync(path.join(acp.cwd, 'sub'));
    symlinkSync(outside, path.join(acp.cwd, 'sub', 'escape'));
    const steps = [
      { read: 'inside.txt' },
      { read: path.join(outside, 'secret.txt') },
      { read: 'sub/../../secret.txt' },
      { read: 'sub/escape/secret.txt' },
      { write: { path: path.join(outside, 'planted.txt'), content: 'x' } },
      { write: { path: 'sub/escape/planted.txt', content: 'x' } },
      { write: { path: 'big.txt', content: 'x', repeat: 10 * 1024 * 1024 + 1 } },
      { write: { path: 'sub/deeper/ok.txt', content: 'fine' } },
    ];
    const done = await runTask(broker, acp.spec(script(steps), { settings: allowEdits }));
    expect(done.error).toBeUndefined();
    const data = done.payload!.data as Record<string, any>;
    expect(data.text).toContain('[read inside.txt: 12 chars: line1');
    expect(data.text).not.toContain('top secret');
    expect(data.text).toMatch(/\[read \/.*secret\.txt refused: .*outside the task's directory\]/);
    expect(data.text).toMatch(/\[read sub\/\.\.\/\.\.\/secret\.txt refused: .*"\.\." is not allowed\]/);
    expect(data.text).toMatch(/\[read sub\/escape\/secret\.txt refused: .*symlink leads outside/);
    expect(data.text).toMatch(/\[write sub\/escape\/planted\.txt refused: .*symlink leads outside/);
    expect(data.text).toMatch(/\[write big\.txt refused: .*over the 10485760-byte limit\]/);
    expect(existsSync(path.join(outside, 'planted.txt'))).toBe(false);
    expect(existsSync(path.join(acp.cwd, 'big.txt'))).toBe(false);
    expect(readFileSync(path.join(acp.cwd, 'sub/deeper/ok.txt'), 'utf8')).toBe('fine');
    expect(data.files_written).toEqual(['sub/deeper/ok.txt']);
    // Each refusal is recorded with the work.
    expect(data.refusals).toHaveLength(6);
  });

  test('a read over 10 MiB is refused', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    writeFileSync(path.join(acp.cwd, 'huge.txt'), Buffer.alloc(10 * 1024 * 1024 + 1, 'a'));
    const done = await runTask(broker, acp.spec(script([{ read: 'huge.txt' }])));
    expect((done.payload!.data as any).text).toMatch(/\[read huge\.txt refused: .*10485761 bytes is over the 10485760-byte limit\]/);
  });
});
