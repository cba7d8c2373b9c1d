/**
 * `backchannel check`: known-good agents pass; each deliberately broken agent (./agents) fails exactly
 * the scenario it breaks, with a message that names the rule.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { checkAgent, formatReport, SCENARIO_NAMES, type ReportCard } from '../../src/conformance/check.js';
import { ROOT, tempDir } from '../helpers/core.js';

const agent = (name: string) => ({ command: 'node', args: [path.join(ROOT, 'test/conformance/agents', `${name}.mjs`)], timeoutMs: 20_000 });

/**
 * Runs a command to its end without blocking this process (a spawnSync would hold the event loop, so
 * the concurrent tests beside it, and their broker's timers, would wait for it). Killed after `timeoutMs`.
 */
function run(command: string, args: string[], options: { cwd: string; timeoutMs: number }) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The real CLI, from the repository root. */
function cli(...args: string[]) {
  return run(process.execPath, [path.join(ROOT, 'bin/backchannel.js'), 'check', ...args], { cwd: ROOT, timeoutMs: 150_000 });
}

const failedOf = (card: ReportCard) => card.results.filter((r) => r.verdict.status === 'fail').map((r) => r.name);

/** Fixture → the one scenario it breaks, and words its message must contain. */
const BROKEN: Array<[string, string, RegExp]> = [
  ['no-newline', 'payloads', /closed mid-line/],
  ['wrong-task-id', 'task-id', /wrong one: .*message for task/],
  [
    'no-heartbeat',
    'heartbeat',
    /silent for \d+ ms while busy, between its lines \d+ and \d+ of \d+ \(allowed: 3 × CURSOR_HEARTBEAT_MS = 3000 ms/,
  ],
  ['ignores-cancel', 'cancel', /no `cancelled` payload .*SIGKILL/],
  ['leaves-grandchild', 'clean-exit', /still running after it exited/],
  ['writes-after-final', 'final-once', /wrote after its final payload/],
  ['stdout-only', 'connect', /nothing arrived over the socket/],
  ['not-utf8', 'utf8', /not UTF-8/],
];

describe('backchannel check', () => {
  test('a conformant agent that honours the conformance input fields passes every scenario', async () => {
    const card = await checkAgent(agent('good'));
    expect(card.results.map((r) => r.name)).toEqual(SCENARIO_NAMES);
    // On a machine too busy for its timing a scenario may be unjudged: neither a failure nor a warning.
    expect(card.results.filter((r) => r.verdict.status === 'fail' || r.verdict.status === 'warn')).toEqual([]);
  }, 180_000);

  describe.concurrent('each broken agent fails exactly the scenario it breaks, naming the rule', () => {
    test.each(BROKEN)(
      '%s fails %s',
      async (name, scenario, message) => {
        const card = await checkAgent(agent(name));
        expect(failedOf(card), formatReport(card)).toEqual([scenario]);
        const result = card.results.find((r) => r.name === scenario)!;
        expect(result.rule).toMatch(/^§\d/);
        expect(result.verdict.status === 'fail' && result.verdict.detail).toMatch(message);
      },
      180_000,
    );
  });

  test.concurrent.each([
    ['raw-node', ['node', 'templates/raw-node/agent.mjs']],
    ['python', ['python3', 'templates/python/agent.py']],
    ['basic', ['templates/basic/agent.ts']],
  ])(
    'the %s template passes every scenario, echo, heartbeat and cancel included (no warnings)',
    async (_name, agentCommand) => {
      // The command docs/protocol.md and docs/writing-sub-agents.md show.
      const run = await cli('--', ...agentCommand);
      expect(run.stdout).not.toContain('warn:');
      // On a machine too busy for its timing, a scenario may be unjudged; it never fails.
      expect(run.stdout).toMatch(/\n(11 passed, 0 failed, 0 warning\(s\)\n|\d+ passed, 0 failed, 0 warning\(s\), \d+ could not be judged)/);
      expect(run.status, run.stdout).toBe(0);
    },
    160_000,
  );

  test('an agent that never connects passes no scenario: what it never did is failed or "not verified"', async () => {
    const card = await checkAgent(agent('never-connects'));
    const passed = card.results.filter((r) => r.verdict.status === 'pass').map((r) => r.name);
    expect(passed).toEqual([]);
    expect(failedOf(card)).toEqual(expect.arrayContaining(['task-id', 'connect', 'payloads', 'stdout-fallback']));
    for (const name of ['progress', 'final-once', 'utf8', 'clean-exit']) {
      expect(card.results.find((r) => r.name === name)?.verdict).toMatchObject({
        status: 'warn',
        detail: expect.stringMatching(/^not verified: /),
      });
    }
  });

  test('a scaffolded project runs backchannel check in its own npm test', async () => {
    const dir = path.join(tempDir(), 'my-agent');
    expect(
      (
        await run(process.execPath, [path.join(ROOT, 'bin/backchannel.js'), 'new', dir, '--template', 'raw-node'], {
          cwd: ROOT,
          timeoutMs: 60_000,
        })
      ).status,
    ).toBe(0);
    const test = await run('npm', ['test'], { cwd: dir, timeoutMs: 120_000 });
    expect(test.stdout).toContain('backchannel check: node agent.mjs');
    expect(test.stdout).toMatch(/\d+ passed, 0 failed, 0 warning\(s\)/);
    expect(test.stdout).not.toContain('warn:');
    expect(test.status, test.stdout + test.stderr).toBe(0);
  }, 130_000);

  test('the CLI prints the report card, --json and --scenario work, and it exits 1 on a failure', async () => {
    const check = cli;
    const failing = await check('--scenario', 'final-once,utf8', '--', 'node', 'test/conformance/agents/writes-after-final.mjs');
    expect(failing.status).toBe(1);
    expect(failing.stdout).toMatch(/✗ final-once\s+§5: send exactly one final payload/);
    expect(failing.stdout).toMatch(/✓ utf8/);
    expect(failing.stdout).toContain('1 passed, 1 failed, 0 warning(s)');
    // The rules name CURSOR_* variables; one line says they are every sub-agent's, not Cursor's alone.
    expect(failing.stdout).toContain('the other CURSOR_* variables are the hand-off of every sub-agent, whatever tool runs it');
    const json = await check('--json', '--scenario', 'connect', '--', 'node', 'test/conformance/agents/good.mjs');
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ passed: 1, failed: 0, results: [{ name: 'connect', verdict: { status: 'pass' } }] });
    expect((await check('--scenario', 'nope', '--', 'node', 'x.mjs')).status).toBe(2);
    expect((await check()).status).toBe(2);
    expect((await check('--help')).stdout).toContain('Usage: backchannel check');
  });
});
