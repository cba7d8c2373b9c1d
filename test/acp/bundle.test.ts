/**
 * The ACP adapter as a build bundles it (scripts/build-acp.mjs, issue 44's overhead): two files, so an
 * ACP task's start loads no module tree. Built here into a directory of its own (beside a link to
 * dist/relay, as in dist/), then run as a real task: a prompt whose edit the policy allows, and bridge
 * mode, where the relay is loaded from tsc's output and the caller's tools are still the ones allowed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ToolDefinition } from '../../src/model/task.js';
import { runTask } from '../helpers/broker.js';
import { ROOT, makeBroker } from '../helpers/core.js';
import { acpCase, script } from './acp-helpers.js';

let dir: string;
let built: string;

beforeAll(() => {
  // Not tempDir (its cleanups run after each test): the build serves the whole file.
  dir = mkdtempSync(path.join(os.tmpdir(), 'bc-acp-bundle-'));
  built = path.join(dir, 'acp');
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts/build-acp.mjs'), '--outdir', built], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(build.status, build.stderr).toBe(0);
  symlinkSync(path.join(ROOT, 'dist/relay'), path.join(dir, 'relay'));
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What a built file imports, statically or not, other than Node's own modules. */
function importsOf(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  // `… from"x"`, `import("x")`, and a bare `import"x"` where a statement starts.
  const found = [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|(?:^|[;{}])\s*import\s*)"([^"]+)"/gm)].map((m) => m[1]!);
  return [...new Set(found.filter((spec) => !spec.startsWith('node:')))].sort();
}

const WRITE_FILE: ToolDefinition = { name: 'write_file', input_schema: { type: 'object' } };

describe('the bundled ACP adapter', () => {
  test('is two files: main.js loads only adapter.js, and adapter.js only the relay (bridge mode)', () => {
    expect(importsOf(path.join(built, 'main.js'))).toEqual(['./adapter.js']);
    expect(importsOf(path.join(built, 'adapter.js'))).toEqual(['../relay/index.js']);
  });

  test('runs a prompt to end_turn: the policy allows an edit, the file is written through the client', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [
      { tool: { id: 'w1', title: 'Write notes.txt', kind: 'edit', paths: ['notes.txt'] } },
      { permission: { id: 'w1', write: { path: 'notes.txt', content: 'bundled' } } },
      { say: 'done' },
    ];
    const spec = acp.spec(script(steps), { settings: { approvals: { edit: 'allow' } } });
    const done = await runTask(broker, { ...spec, command: path.join(built, 'main.js') });
    expect(done.error).toBeUndefined();
    const data = done.payload!.data as Record<string, any>;
    expect(data.stop_reason).toBe('end_turn');
    expect(data.text).toContain('[permission w1: allow-once]');
    expect(data.files_written).toEqual(['notes.txt']);
    expect(readFileSync(path.join(acp.cwd, 'notes.txt'), 'utf8')).toBe('bundled');
  });

  test("bridge mode: the relay is offered in session/new, the caller's tool allowed and the agent's own edit refused", async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [
      { mcpServers: true },
      { permission: { id: 'b1', title: 'write_file', kind: 'other' } },
      { permission: { id: 'e1', write: { path: 'own.txt', content: 'x' } } },
    ];
    const spec = acp.spec(script(steps));
    const done = await runTask(broker, { ...spec, command: path.join(built, 'main.js'), tools: [WRITE_FILE] });
    expect(done.error).toBeUndefined();
    const text = (done.payload!.data as Record<string, any>).text as string;
    expect(text).toContain(`[mcp: backchannel:${process.execPath}]`);
    expect(text).toContain('[permission b1: allow-once]');
    expect(text).toContain('[permission e1: reject-once]');
    expect(text).not.toContain('[wrote own.txt]');
  });
});
