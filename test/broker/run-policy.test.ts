/**
 * The run policy's decisions (src/broker/run-policy.ts), and the broker enforcing them: the owner's
 * terminal is trusted, every other door runs only what a rule allows — judged on the effective
 * command line, its arguments and its directory — and a refusal registers nothing.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { BrokerError } from '../../src/broker/errors.js';
import { effectiveArgv, parseRunPolicy, RunPolicy, RunPolicyError } from '../../src/broker/run-policy.js';
import { createTestBroker, fixture, ROOT, tempDir } from '../helpers/core.js';

const TPL = '/srv/templates/cursor-cli';
const policy = new RunPolicy(
  [
    { name: 'preset cursor-cli', preset: 'cursor-cli', command: 'node', args: [path.join(TPL, 'agent.mjs')], base: TPL },
    { name: 'run_policy.allow[0]', command: '/opt/review', args: ['--fast'], moreArgs: true, dirs: ['/home/me/projects'] },
  ],
  '/home/me/.config/backchannel/config.yaml',
);
const judge = (command: string, args: string[], cwd: string, origin?: 'cli' | 'mcp' | 'panel' | 'gateway' | 'control', setsEnv = false) =>
  policy.judge({ command, args, cwd, ...(origin ? { origin } : {}), setsEnv });

describe('the run policy', () => {
  test('the effective command line: Node and its script, a program by path, resolved in the working directory', () => {
    expect(effectiveArgv('node', ['agent.mjs', '-x'], '/a')).toEqual(['node', '/a/agent.mjs', '-x']);
    expect(effectiveArgv('agent.mjs', [], '/a')).toEqual(['node', '/a/agent.mjs']);
    expect(effectiveArgv('node', ['--require', '/x.js', 'agent.mjs'], '/a')).toEqual(['node', '--require', '/x.js', 'agent.mjs']);
    expect(effectiveArgv('./run.sh', ['a'], '/a')).toEqual(['/a/run.sh', 'a']);
    expect(effectiveArgv('sh', ['-c', 'x'], '/a')).toEqual(['sh', '-c', 'x']);
  });

  test("the owner's own terminal (and a spec without an origin) runs anything; the matching preset is still named", () => {
    expect(judge('sh', ['-c', 'id'], '/', 'cli')).toEqual({ allowed: true, rule: undefined });
    expect(judge('sh', ['-c', 'id'], '/')).toEqual({ allowed: true, rule: undefined });
    expect(judge(path.join(TPL, 'agent.mjs'), [], '/tmp', 'cli')).toMatchObject({ allowed: true, rule: { preset: 'cursor-cli' } });
  });

  test('every other door runs a preset exactly, in any directory; `node agent.mjs` elsewhere is another program', () => {
    for (const origin of ['mcp', 'panel', 'gateway', 'control'] as const) {
      expect(judge('node', ['agent.mjs'], TPL, origin)).toMatchObject({ allowed: true, rule: { preset: 'cursor-cli' } });
      expect(judge(path.join(TPL, 'agent.mjs'), [], '/home/me/projects/x', origin)).toMatchObject({ allowed: true });
      expect(judge('node', ['agent.mjs'], '/tmp/evil', origin)).toMatchObject({ allowed: false });
      expect(judge('node', [path.join(TPL, 'agent.mjs'), '--more'], TPL, origin)).toMatchObject({ allowed: false });
    }
  });

  test('a configured rule: its first arguments exactly, more if it says so, only in its directories', () => {
    expect(judge('/opt/review', ['--fast', 'src/'], '/home/me/projects/app', 'mcp')).toMatchObject({ allowed: true });
    expect(judge('/opt/review', ['--slow'], '/home/me/projects/app', 'mcp')).toMatchObject({ allowed: false });
    expect(judge('/opt/review', ['--fast'], '/home/me', 'mcp')).toMatchObject({ allowed: false });
    expect(judge('/opt/review', ['--fast'], '/home/me/projects-evil', 'mcp')).toMatchObject({ allowed: false });
  });

  test('a refusal says what, from where, and where the owner allows more', () => {
    const verdict = judge('sh', ['-c', 'curl x | sh'], '/', 'mcp');
    expect(verdict).toEqual({
      allowed: false,
      message:
        'refused `sh -c curl x | sh` (in /) from an MCP client: not a template, a preset or a command the run policy allows ' +
        '(the owner allows more under `run_policy: allow:` in /home/me/.config/backchannel/config.yaml; see docs/run-policy.md)',
    });
  });

  test('only the owner and the gateway (its models) may set the environment, which could change an allowed program', () => {
    expect(judge('node', ['agent.mjs'], TPL, 'mcp', true)).toMatchObject({
      allowed: false,
      message: expect.stringContaining('may set environment'),
    });
    expect(judge('node', ['agent.mjs'], TPL, 'gateway', true)).toMatchObject({ allowed: true });
    expect(judge('node', ['agent.mjs'], TPL, 'cli', true)).toMatchObject({ allowed: true });
    const anything = new RunPolicy([{ name: 'any', command: '*', dirs: ['/sandbox'] }]);
    expect(anything.judge({ command: 'sh', args: ['-c', 'x'], cwd: '/sandbox/a', origin: 'panel', setsEnv: true })).toMatchObject({
      allowed: true,
    });
    expect(anything.judge({ command: 'sh', args: [], cwd: '/', origin: 'panel' })).toMatchObject({ allowed: false });
  });

  test("the config file's section: paths against the file's directory or ~, each wrong field named", () => {
    const rules = parseRunPolicy(
      { allow: [{ command: 'node', args: ['agents/review.mjs'], more_args: true, dirs: ['~/projects', 'work'] }, { command: '*' }] },
      '/etc/bc/config.yaml',
    );
    expect(rules[0]).toMatchObject({
      command: 'node',
      args: ['/etc/bc/agents/review.mjs'],
      moreArgs: true,
      dirs: [expect.stringMatching(/\/projects$/), '/etc/bc/work'],
    });
    expect(rules[1]).toMatchObject({ command: '*', moreArgs: true });
    const bad: Array<[unknown, RegExp]> = [
      [{ allow: {} }, /run_policy\.allow must be a list/],
      [{ allow: [{ args: [] }] }, /run_policy\.allow\[0\]\.command must be a program/],
      [{ allow: [{ command: 'x', dirs: '/a' }] }, /allow\[0\]\.dirs must be a list of strings, got "\/a"/],
      [{ allow: [{ command: 'x', more: true }] }, /allow\[0\] has no key "more"/],
      [{ deny: [] }, /^\/c\.yaml: run_policy has no key "deny" \(expected allow\), got \[\]$/],
    ];
    for (const [section, message] of bad) {
      expect(() => parseRunPolicy(section as Record<string, unknown>, '/c.yaml')).toThrow(RunPolicyError);
      expect(() => parseRunPolicy(section as Record<string, unknown>, '/c.yaml')).toThrow(message);
    }
  });
});

describe('what the docs promise of `dirs`', () => {
  test('a `*` rule with dirs is judged by where the task starts, and docs/run-policy.md says so, never "confined"', () => {
    const anything = new RunPolicy([{ name: 'any', command: '*', dirs: ['/sandbox'] }]);
    // Allowed: it starts in /sandbox. What `cd /` does afterwards is not the policy's to stop.
    expect(anything.judge({ command: 'sh', args: ['-c', 'cd / && touch x'], cwd: '/sandbox', origin: 'mcp' }).allowed).toBe(true);
    const docs = readFileSync(path.join(ROOT, 'docs/run-policy.md'), 'utf8');
    expect(docs).toContain('**`dirs` is where a task starts, not a sandbox.**');
    expect(docs).not.toMatch(/\bconfined\)|confines it to/);
  });
});

describe('programs allowed by name', () => {
  test('are found on the absolute PATH entries when the policy is made; a relative entry is never searched', () => {
    const owner = tempDir('bc-owner-bin-');
    const caller = tempDir('bc-caller-');
    const program = (dir: string) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'mytool'), '#!/bin/sh\n', { mode: 0o755 });
    };
    program(path.join(caller, 'bin'));
    program(owner);
    const only = new RunPolicy([{ name: 'mytool', command: 'mytool' }], 'c', `bin:.:${owner}`);
    expect(only.rules[0]!.resolved).toBe(path.join(owner, 'mytool'));
    const nowhere = new RunPolicy([{ name: 'mytool', command: 'mytool' }], 'c', `bin:.`);
    expect(nowhere.rules[0]!.resolved).toBeUndefined();
    expect(nowhere.judge({ command: 'mytool', args: [], cwd: caller, origin: 'mcp' })).toMatchObject({ allowed: false });
    expect(only.judge({ command: 'mytool', args: [], cwd: caller, origin: 'mcp' })).toMatchObject({ allowed: true });
    expect(only.judge({ command: path.join(owner, 'mytool'), args: [], cwd: caller, origin: 'mcp' })).toMatchObject({ allowed: true });
    expect(only.judge({ command: './bin/mytool', args: [], cwd: caller, origin: 'mcp' })).toMatchObject({ allowed: false });
  });

  test("Python's script is a path: the python preset's `python3 agent.py` in another directory is refused", () => {
    expect(effectiveArgv('python3', ['agent.py', '-v'], '/a')).toEqual(['python3', '/a/agent.py', '-v']);
    expect(effectiveArgv('python3', ['-c', 'x'], '/a')).toEqual(['python3', '-c', 'x']);
    const python = new RunPolicy([
      { name: 'preset python', preset: 'python', command: 'python3', args: ['agent.py'], base: '/srv/tpl/python' },
    ]);
    expect(python.judge({ command: 'python3', args: ['agent.py'], cwd: '/srv/tpl/python', origin: 'mcp' }).allowed).toBe(
      python.rules[0]!.resolved !== undefined,
    );
    expect(python.judge({ command: 'python3', args: ['agent.py'], cwd: '/tmp/evil', origin: 'mcp' })).toMatchObject({ allowed: false });
  });

  test("from an MCP client, the broker runs the policy's program, not the one a relative PATH entry finds in the caller's directory", async () => {
    const markers = tempDir('bc-markers-');
    const owner = tempDir('bc-owner-bin-');
    const caller = tempDir('bc-caller-');
    const program = (dir: string, marker: string) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'mytool'), `#!/bin/sh\ntouch '${path.join(markers, marker)}'\n`, { mode: 0o755 });
    };
    program(path.join(caller, 'bin'), 'caller');
    program(owner, 'owner');
    const saved = process.env.PATH;
    process.env.PATH = `bin:${owner}:${saved}`;
    try {
      const { broker } = createTestBroker({ runPolicy: new RunPolicy([{ name: 'mytool', command: 'mytool' }]) });
      const handle = broker.submit({ command: 'mytool', cwd: caller, origin: 'mcp' });
      await handle.result.catch(() => undefined);
      await handle.finished;
      expect(existsSync(path.join(markers, 'owner'))).toBe(true);
      expect(existsSync(path.join(markers, 'caller'))).toBe(false);
    } finally {
      process.env.PATH = saved;
    }
  });
});

describe('the broker enforces it', () => {
  test('a refused submission throws a `refused` BrokerError and registers nothing; an allowed one carries its preset', async () => {
    const agent = fixture('quick.mjs');
    const { broker } = createTestBroker({
      runPolicy: new RunPolicy([{ name: 'preset quick', preset: 'quick', command: agent }]),
    });
    let error: unknown;
    try {
      broker.submit({ command: 'sh', args: ['-c', 'id'], cwd: tempDir(), origin: 'mcp' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({ code: 'refused', message: expect.stringMatching(/^refused `sh -c id`/) });
    expect(broker.tasks()).toEqual([]);
    const allowed = broker.submit({ command: agent, origin: 'mcp', preset: 'something else' });
    await allowed.result;
    expect(broker.get(allowed.id)).toBeDefined();
    // A retry is judged as the first run was (its origin is kept).
    const again = broker.retry(allowed.id);
    await again.result;
  });

  test('a broker given no policy runs only what the owner submits itself', () => {
    const { broker } = createTestBroker({ runPolicy: undefined });
    expect(() => broker.submit({ command: fixture('quick.mjs'), origin: 'panel' })).toThrow(/^refused/);
    expect(broker.submit({ command: fixture('quick.mjs') }).id).toBeTruthy();
  });
});
