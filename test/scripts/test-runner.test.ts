/**
 * `npm test` on a fresh machine (issue 12 item 15): a Chromium is looked for in the standard places,
 * and the summary never counts a skipped or not-run browser test as a pass, listing each skip's reason.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

function summary(reports: { vitest?: unknown; playwright?: unknown; pytest?: string; chromiumMissing?: boolean }) {
  const cwd = tempDir();
  mkdirSync(path.join(cwd, 'test-results'));
  if (reports.pytest) writeFileSync(path.join(cwd, 'test-results/pytest.xml'), reports.pytest);
  if (reports.vitest) writeFileSync(path.join(cwd, 'test-results/vitest.json'), JSON.stringify(reports.vitest));
  if (reports.playwright) writeFileSync(path.join(cwd, 'test-results/playwright.json'), JSON.stringify(reports.playwright));
  if (reports.chromiumMissing) writeFileSync(path.join(cwd, 'test-results/chromium-missing'), 'none\n');
  return spawnSync(process.execPath, [path.join(ROOT, 'scripts/test-summary.mjs')], { cwd, encoding: 'utf8' });
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
