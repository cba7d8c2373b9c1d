/**
 * `npm test` on a fresh machine (issue 12 item 15): a Chromium is looked for in the standard places,
 * and the summary never counts a skipped or not-run browser test as a pass, listing each skip's reason.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

interface Reports {
  vitest?: unknown;
  vitestWaiting?: unknown;
  playwright?: unknown;
  pytest?: string;
  chromiumMissing?: boolean;
  timings?: Record<string, number>;
}

function summary(reports: Reports) {
  const cwd = tempDir();
  mkdirSync(path.join(cwd, 'test-results'));
  if (reports.vitestWaiting) writeFileSync(path.join(cwd, 'test-results/vitest-waiting.json'), JSON.stringify(reports.vitestWaiting));
  if (reports.timings) writeFileSync(path.join(cwd, 'test-results/timings.json'), JSON.stringify(reports.timings));
  if (reports.pytest) writeFileSync(path.join(cwd, 'test-results/pytest.xml'), reports.pytest);
  if (reports.vitest) writeFileSync(path.join(cwd, 'test-results/vitest.json'), JSON.stringify(reports.vitest));
  if (reports.playwright) writeFileSync(path.join(cwd, 'test-results/playwright.json'), JSON.stringify(reports.playwright));
  if (reports.chromiumMissing) writeFileSync(path.join(cwd, 'test-results/chromium-missing'), 'none\n');
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts/test-summary.mjs')], { cwd, encoding: 'utf8' });
  const slowest = path.join(cwd, 'test-results/slowest.txt');
  return { ...run, slowest: existsSync(slowest) ? readFileSync(slowest, 'utf8') : undefined };
}

const VITEST_OK = {
  numPassedTests: 2,
  numFailedTests: 0,
  numPendingTests: 1,
  testResults: [{ assertionResults: [{ status: 'skipped', title: 'as nobody (skipped: switching to nobody needs root)' }] }],
};

function playwrightReport(annotations: unknown[]) {
  return {
    stats: { expected: 3, flaky: 0, unexpected: 0, skipped: 1 },
    suites: [{ specs: [{ title: 'the panel loads', tests: [{ annotations, results: [{ status: 'skipped' }] }] }] }],
  };
}

describe('the test summary', () => {
  test('every skip is listed with its reason; a reasoned skip does not fail the run', () => {
    const result = summary({ vitest: VITEST_OK, playwright: playwrightReport([{ type: 'skip', description: 'no display' }]) });
    expect(result.stdout).toContain('skipped (vitest) as nobody (skipped: switching to nobody needs root): switching to nobody needs root');
    expect(result.stdout).toContain('skipped (playwright) the panel loads: no display');
    expect(result.status).toBe(0);
  });

  test('a browser test that did not run without a reason fails the run', () => {
    const result = summary({ vitest: VITEST_OK, playwright: playwrightReport([]) });
    expect(result.stdout).toContain('did not run, no reason given (counted as a failure)');
    expect(result.status).toBe(1);
  });

  test('a browser suite that could not run for want of a Chromium fails the run', () => {
    const result = summary({ vitest: VITEST_OK, chromiumMissing: true });
    expect(result.stdout).toContain('playwright: did not run: no Chromium could be found or installed');
    expect(result.status).toBe(1);
  });
});

describe('the test summary names the failed tests at its end', () => {
  test('vitest tests, a vitest file that failed outside its tests, browser tests and pytest tests', () => {
    const vitest = {
      numPassedTests: 1,
      numFailedTests: 1,
      numPendingTests: 0,
      testResults: [
        {
          name: '/somewhere/test/a.test.ts',
          status: 'failed',
          assertionResults: [
            { status: 'passed', title: 'fine', fullName: 'a fine' },
            { status: 'failed', title: 'breaks', fullName: 'a breaks' },
          ],
        },
        { name: '/somewhere/test/b.test.ts', status: 'failed', message: '\nFailed to load url ./gone.js\n  at …', assertionResults: [] },
      ],
    };
    const playwright = {
      stats: { expected: 1, flaky: 0, unexpected: 1, skipped: 0 },
      suites: [
        {
          title: 'panel.spec.ts',
          specs: [{ title: 'loads', tests: [{ status: 'expected', results: [] }] }],
          suites: [{ title: 'insights', specs: [{ title: 'draws the chart', tests: [{ status: 'unexpected', results: [] }] }] }],
        },
      ],
    };
    const pytest =
      '<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="2">' +
      '<testcase classname="tests.test_package" name="test_ok" time="0.1" />' +
      '<testcase classname="tests.test_package" name="test_attach" time="0.1"><failure message="assert 1 == 2">…</failure></testcase>' +
      '</testsuite></testsuites>';
    const result = summary({ vitest, playwright, pytest });
    expect(result.status).toBe(1);
    const tail = result.stdout.slice(result.stdout.indexOf('total:'));
    expect(tail).toContain(
      [
        'failed (4):',
        '  ✗ vitest /somewhere/test/a.test.ts › a breaks',
        '  ✗ vitest /somewhere/test/b.test.ts: Failed to load url ./gone.js',
        '  ✗ playwright panel.spec.ts › insights › draws the chart',
        '  ✗ pytest tests.test_package::test_attach',
      ].join('\n'),
    );
  });

  test('a run without failures prints no list', () => {
    expect(summary({ vitest: VITEST_OK }).stdout).not.toContain('failed (');
  });
});

describe('the test summary says how long each runner took (issue 48 item 5)', () => {
  /** A vitest report of one file per entry, `[name, seconds, passed tests]`. */
  const vitestReport = (files: [string, number, number][]) => ({
    numPassedTests: files.reduce((n, [, , passed]) => n + passed, 0),
    numFailedTests: 0,
    numPendingTests: 0,
    testResults: files.map(([name, s, passed]) => ({
      name: `/somewhere/${name}`,
      startTime: 1_000,
      endTime: 1_000 + s * 1000,
      assertionResults: Array.from({ length: passed }, () => ({ status: 'passed', title: 't' })),
    })),
  });

  test("vitest's two projects are counted as one runner; each line ends with its time; the 10 slowest files are listed and kept", () => {
    const main = vitestReport(Array.from({ length: 9 }, (_, n): [string, number, number] => [`test/m${n}.test.ts`, n + 1, 2]));
    const waiting = vitestReport([
      ['test/w-slow.test.ts', 40, 1],
      ['test/w-fast.test.ts', 0.5, 1],
    ]);
    const playwright = {
      stats: { expected: 1, flaky: 0, unexpected: 0, skipped: 0 },
      suites: [{ file: 'panel.spec.ts', specs: [{ title: 'loads', file: 'panel.spec.ts', tests: [{ results: [{ duration: 20_000 }] }] }] }],
    };
    const timings = { 'vitest-main': 300, 'vitest-waiting': 120, vitest: 300, playwright: 250, pytest: 40, all: 302 };
    const result = summary({ vitest: main, vitestWaiting: waiting, playwright, timings });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('vitest: 20 passed, 0 failed, 0 skipped in 300 s (main 300 s, waiting 120 s)\n');
    expect(result.stdout).toContain('playwright: 1 passed, 0 failed, 0 skipped in 250 s\n');
    expect(result.stdout).toContain('total: 21 passed, 0 failed, 0 skipped in 302 s\n');
    const slowest = result.slowest!.trim().split('\n');
    expect(slowest).toHaveLength(10);
    expect(slowest.slice(0, 3)).toEqual([
      '40.0 s  vitest /somewhere/test/w-slow.test.ts',
      '20.0 s  playwright panel.spec.ts',
      '9.0 s  vitest /somewhere/test/m8.test.ts',
    ]);
    expect(slowest.at(-1)).toBe('2.0 s  vitest /somewhere/test/m1.test.ts');
    expect(result.stdout).toContain(`the 10 slowest test files (test-results/slowest.txt):\n  ${slowest.join('\n  ')}\n`);
  });

  test('a serial run (one vitest report, no project times) says only the totals', () => {
    const result = summary({ vitest: vitestReport([['test/a.test.ts', 1, 1]]), timings: { vitest: 500, pytest: 30, all: 900 } });
    expect(result.stdout).toContain('vitest: 1 passed, 0 failed, 0 skipped in 500 s\n');
    expect(result.stdout).toContain('total: 1 passed, 0 failed, 0 skipped in 900 s\n');
  });
});

describe('npm test runs its lanes at once (scripts/test.mjs, issue 48 item 5)', () => {
  /** A copy of the runner in a scratch project whose npx and pytest are shell stand-ins writing their reports. */
  function scratchProject(): string {
    const cwd = tempDir();
    mkdirSync(path.join(cwd, 'scripts'));
    for (const file of ['test.mjs', 'test-summary.mjs', 'find-chromium.mjs', 'ensure-installed.mjs'])
      copyFileSync(path.join(ROOT, 'scripts', file), path.join(cwd, 'scripts', file));
    const bin = path.join(cwd, 'bin');
    mkdirSync(bin);
    mkdirSync(path.join(cwd, '.venv-test/bin'), { recursive: true });
    const report = (passed: number) => JSON.stringify({ numPassedTests: passed, numFailedTests: 0, numPendingTests: 0, testResults: [] });
    // vitest's main project waits (bounded) for pytest's report: it can only end if the other lanes ran beside it.
    const npx = [
      '#!/bin/sh',
      'echo "npx $*" >> calls.log',
      'case "$*" in',
      `  *"--project main"*) n=0; while [ ! -f test-results/pytest.xml ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done; sleep 2; echo main-output; echo '${report(2)}' > test-results/vitest.json ;;`,
      `  *"--project waiting"*) echo waiting-output; echo '${report(1)}' > "$BACKCHANNEL_VITEST_JSON" ;;`,
      `  *playwright*) echo playwright-output; echo '{"stats":{"expected":1,"flaky":0,"unexpected":0,"skipped":0},"suites":[]}' > "$PLAYWRIGHT_JSON_OUTPUT_NAME" ;;`,
      'esac',
    ].join('\n');
    const python = [
      '#!/bin/sh',
      '[ "$1" = "-c" ] && exit 0',
      'echo pytest-output',
      `echo '<testsuite name="pytest" errors="0" failures="0" skipped="0" tests="3"></testsuite>' > test-results/pytest.xml`,
    ].join('\n');
    writeFileSync(path.join(bin, 'npx'), npx + '\n');
    writeFileSync(path.join(cwd, '.venv-test/bin/python'), python + '\n');
    chmodSync(path.join(bin, 'npx'), 0o755);
    chmodSync(path.join(cwd, '.venv-test/bin/python'), 0o755);
    return cwd;
  }

  test("the waiting project, the browser suite and pytest run beside vitest's main project; each time is its own", () => {
    const cwd = scratchProject();
    const run = spawnSync(process.execPath, ['scripts/test.mjs'], {
      cwd,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        PATH: `${path.join(cwd, 'bin')}:${process.env.PATH}`,
        CHROMIUM_PATH: '/bin/true',
        BACKCHANNEL_TEST_SERIAL: '',
      },
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    // The logged lanes are printed after main's own output, each whole, in a fixed order.
    const order = ['main-output', 'waiting-output', 'playwright-output', 'pytest-output'].map((line) => run.stdout.indexOf(line));
    expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!))).toBe(true);
    const timings = JSON.parse(readFileSync(path.join(cwd, 'test-results/timings.json'), 'utf8')) as Record<string, number>;
    // Was: the browser suite's time was read only once vitest and pytest were done, so it was theirs.
    expect(timings.playwright).toBeLessThan(timings['vitest-main']!);
    expect(timings.vitest).toBe(timings['vitest-main']);
    expect(run.stdout).toMatch(/\nvitest: 3 passed, 0 failed, 0 skipped in \d+ s \(main \d+ s, waiting \d+ s\)\n/);
    expect(run.stdout).toMatch(/\ntotal: 7 passed, 0 failed, 0 skipped in \d+ s\n/);
  });
});

describe('finding a Chromium', () => {
  const find = (env: Record<string, string>) =>
    spawnSync(process.execPath, [path.join(ROOT, 'scripts/find-chromium.mjs')], {
      encoding: 'utf8',
      env: { PATH: env.PATH ?? '', HOME: tempDir(), ...(env.CHROMIUM_PATH ? { CHROMIUM_PATH: env.CHROMIUM_PATH } : {}) },
    });

  test('CHROMIUM_PATH wins; otherwise chromium, chromium-browser or google-chrome on PATH; none says so', () => {
    const bin = tempDir();
    const fake = path.join(bin, 'chromium-browser');
    writeFileSync(fake, '#!/bin/sh\n');
    chmodSync(fake, 0o755);
    expect(find({ PATH: bin }).stdout.trim()).toBe(fake);
    expect(find({ PATH: bin, CHROMIUM_PATH: '/bin/true' }).stdout.trim()).toBe('/bin/true');
    const none = find({ PATH: tempDir() });
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('No Chromium found');
  });

  /** A directory of shell scripts standing in for programs (each records its arguments in `<name>.args`). */
  function standIns(scripts: Record<string, string>): string {
    const bin = tempDir();
    for (const [name, body] of Object.entries(scripts)) {
      writeFileSync(path.join(bin, name), `#!/bin/sh\necho "$@" >> "${bin}/${name}.args"\n${body}\n`);
      chmodSync(path.join(bin, name), 0o755);
    }
    return bin;
  }
  const ENOTFOUND_STACK = Array.from(
    { length: 5 },
    () => 'Error: getaddrinfo ENOTFOUND example.invalid\n    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:120:26)',
  ).join('\n');
  const install = (bin: string) =>
    spawnSync(process.execPath, [path.join(ROOT, 'scripts/find-chromium.mjs'), '--install'], {
      encoding: 'utf8',
      env: { PATH: bin, HOME: tempDir() },
    });

  test('a download that cannot reach the network is one line, not its stack once per retry', () => {
    const bin = standIns({ npx: `/bin/cat >&2 <<'EOF'\n${ENOTFOUND_STACK}\nEOF\nexit 1` });
    const run = install(bin);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('Playwright could not download Chromium: Error: getaddrinfo ENOTFOUND example.invalid\n');
    expect(run.stderr).not.toContain('GetAddrInfoReqWrap');
    expect(run.stderr.match(/ENOTFOUND/g)).toHaveLength(1);
  });

  test.skipIf(process.getuid?.() !== 0 || !existsSync('/etc/debian_version'))(
    "as root on Debian, the fallback installs Debian's chromium without Recommends",
    () => {
      const bin = standIns({ npx: 'exit 1', 'apt-get': 'exit 0' });
      install(bin);
      const calls = readFileSync(path.join(bin, 'apt-get.args'), 'utf8').trim().split('\n');
      expect(calls).toEqual(['update -qq', 'install -y -qq --no-install-recommends chromium']);
    },
  );

  test('the panel benchmarks find their Chromium the same way (was: /usr/bin/chromium or nothing)', () => {
    const launch = (env: Record<string, string>) =>
      spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "const { launchChromium } = await import('./bench/lib/browser.js'); const b = await launchChromium(); console.log('launched', b.version()); await b.close();",
        ],
        { cwd: ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } },
      );
    const bin = tempDir();
    const found = spawnSync(process.execPath, [path.join(ROOT, 'scripts/find-chromium.mjs')], { encoding: 'utf8' }).stdout.trim();
    const elsewhere = path.join(bin, 'my-chromium');
    symlinkSync(found, elsewhere);
    const ran = launch({ CHROMIUM_PATH: elsewhere });
    expect(ran.stdout + ran.stderr).toMatch(/^launched \d+\./m);
    const none = launch({ CHROMIUM_PATH: path.join(bin, 'none') });
    expect(none.status).not.toBe(0);
    expect(none.stderr).toContain('no Chromium found or installed (set CHROMIUM_PATH, or install the chromium package)');
  }, 130_000);
});
