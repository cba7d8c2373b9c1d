import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

function cli(args: string[], cwd = ROOT) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc') },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, lines: result.stderr.trimEnd().split('\n') };
}

describe('usage errors', () => {
  test('a task or change command without its id, or with one too many, is a usage error naming it (exit 2)', () => {
    for (const [args, first] of [
      [['show'], 'backchannel show: missing the task id'],
      [['show', 'a', 'b'], 'backchannel show: unexpected argument "b"'],
      [['discard'], 'backchannel discard: missing the task id'],
    ] as const) {
      const run = cli([...args]);
      expect(run.code).toBe(2);
      expect(run.lines).toEqual([first, `Run \`backchannel ${args[0]} --help\` for usage.`]);
    }
  });

  test('worker: --presets and its old name --templates together are a usage error; --templates alone prints a notice', () => {
    const dir = tempDir();
    const both = cli(['worker', '--redis', 'redis://127.0.0.1:1', '--presets', dir, '--templates', dir]);
    expect(both.code).toBe(2);
    expect(both.lines[0]).toBe('backchannel worker: give `--presets <dir>` only (`--templates` is its old name)');
    // An empty directory allows nothing, so the worker stops before it reaches Redis.
    const old = cli(['worker', '--redis', 'redis://127.0.0.1:1', '--templates', dir]);
    expect(old.code).toBe(2);
    expect(old.lines.slice(0, 2)).toEqual([
      'backchannel worker: `--templates` is deprecated; use `--presets <dir>` (the same directory)',
      'backchannel worker: nothing allowed to run: give `--allow <command>` or `--presets <dir>`',
    ]);
  });

  test('an unknown option is one line plus a pointer to --help, exit 2, quotes balanced', () => {
    const run = cli(['run', '--bogus', '--', 'node', 'x.mjs']);
    expect(run.code).toBe(2);
    expect(run.lines).toEqual(['backchannel run: unknown option --bogus', 'Run `backchannel run --help` for usage.']);
    const agentOption = cli(['run', 'node', 'x.mjs', '--bogus']);
    expect(agentOption.lines[0]).toBe(
      'backchannel run: unknown option --bogus (if it is meant for the agent, put the agent command after `--`)',
    );
    expect(agentOption.lines).toHaveLength(2);
    for (const line of [...run.lines, ...agentOption.lines]) {
      expect(line.split("'").length % 2, line).toBe(1);
      expect(line.split('"').length % 2, line).toBe(1);
      expect(line.split('`').length % 2, line).toBe(1);
    }
  });

  test('with --json a usage error is one JSON object on stdout', () => {
    const run = cli(['run', '--json', '--timeout', 'soon', '--', 'node', 'x.mjs']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({
      status: 'error',
      reason: 'usage',
      message: 'backchannel run: --timeout expects a duration such as 90s, 10m, 1h or a number of milliseconds, got "soon"',
      help: 'backchannel run --help',
    });
  });

  test('--input @file that does not exist says so, without a raw ENOENT', () => {
    const run = cli(['run', '--input', '@nope.json', '--', 'node', 'x.mjs']);
    expect(run.code).toBe(2);
    expect(run.lines[0]).toBe('backchannel run: --input @nope.json: cannot read nope.json (no such file)');
    expect(run.stderr).not.toContain('ENOENT');
  });

  test('an option after the agent command without -- is refused, not silently taken', () => {
    const run = cli(['run', 'python3', 'agent.py', '--verbose']);
    expect(run.code).toBe(2);
    expect(run.lines[0]).toContain('--verbose comes after the command; put `--` before the command');
  });

  test('`help run` prints the help of run; an unknown command is two lines', () => {
    const help = cli(['help', 'run']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: backchannel run /);
    const unknown = cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.lines).toEqual(['backchannel: unknown command "frobnicate"', 'Run `backchannel --help` for the commands.']);
  });
});

// Skipped on Windows (reported as skipped): the completion scripts are for bash, zsh and fish.
describe.skipIf(process.platform === 'win32')('backchannel completion', () => {
  test('bash completes command names and, from each command’s help, its options', () => {
    const script = cli(['completion', 'bash']);
    expect(script.code).toBe(0);
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'completion.bash'), script.stdout);
    fs.symlinkSync(BIN, path.join(dir, 'backchannel'));
    const complete = (words: string[]) =>
      spawnSync(
        'bash',
        [
          '-c',
          `source completion.bash; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _backchannel; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        { cwd: dir, encoding: 'utf8', env: { ...process.env, PATH: `${dir}${path.delimiter}${process.env.PATH}` } },
      ).stdout.trim();
    expect(complete(['backchannel', 'ser'])).toBe('serve');
    expect(complete(['backchannel', 'run', '--ti'])).toBe('--timeout');
  });

  test('zsh and fish scripts name every command; an unknown shell is a usage error', () => {
    for (const shell of ['zsh', 'fish']) {
      const script = cli(['completion', shell]);
      expect(script.code).toBe(0);
      for (const name of ['run', 'send', 'serve', 'new', 'gateway', 'completion']) expect(script.stdout).toContain(name);
    }
    const wrong = cli(['completion', 'tcsh']);
    expect(wrong.code).toBe(2);
    expect(wrong.lines[0]).toBe('backchannel completion: expected one shell, bash, zsh or fish, got "tcsh"');
  });
});

describe('a reader that goes away', () => {
  test('a command whose stdout pipe was closed ends quietly, without an EPIPE stack', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/backchannel.js'), 'run', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // like `| head` that has exited before the command writes
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
