/**
 * `backchannel diff` on a real pseudo-terminal (`script`): its own colours reach the terminal as
 * colours, while an escape sequence the agent wrote into a file is shown neutralised (U+FFFD);
 * piped, the diff is byte for byte.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, fixture, tempDir } from '../helpers/core.js';
import { makeRepo } from '../helpers/git-repo.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');
const EVIL = '\u001b]0;pwned\u0007\u001b[2J';

function runCli(args: string[], env: Record<string, string>, cwd = ROOT): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

/** `backchannel <args>` with stdout on a pseudo-terminal; what it showed. */
function onTerminal(args: string[], env: Record<string, string>): Promise<string> {
  const line = [process.execPath, BIN, ...args].map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-qefc', line, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let shown = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (shown += chunk));
    child.on('close', () => resolve(shown));
  });
}

describe.skipIf(spawnSync('script', ['--version']).error)('diff on a terminal', () => {
  test("shows the product's own colours, the agent's escapes neutralised; piped output is exact", async () => {
    const state = path.join(tempDir('bc-state-'), 'state');
    const env = {
      XDG_STATE_HOME: state,
      CURSOR_IPC_DIR: path.join(state, 'ipc'),
      BACKCHANNEL_CONTROL: path.join(tempDir('bc-nohub-'), 'control.sock'),
    };
    const repo = makeRepo();
    const edits = JSON.stringify({ edits: [{ path: 'evil.txt', content: `clean line\n${EVIL}fake\n` }] });
    const run = await runCli(['run', '--worktree', '--json', '--input', edits, '--', fixture('coder.mjs')], env, repo);
    expect(run.code).toBe(0);
    const id = (JSON.parse(run.stdout) as { task_id: string }).task_id;

    const shown = await onTerminal(['diff', id], { ...env, TERM: 'xterm' });
    expect(shown).toContain('\u001b[32m+clean line\u001b[0m');
    expect(shown).toContain('\u001b[1mdiff --git a/evil.txt b/evil.txt\u001b[0m');
    expect(shown).not.toMatch(/\uFFFD\[(1|32|36|0)m/);
    expect(shown).toContain('+\uFFFD]0;pwned\uFFFD\uFFFD[2Jfake');
    expect(shown).not.toContain('\u001b]0;');

    const piped = await runCli(['diff', id], env);
    expect(piped.stdout).toContain(`+${EVIL}fake\n`);
  });
});
