#!/usr/bin/env node
// Prints one "N passed, N failed, N skipped" line per runner and a total, from the reports the test
// runners wrote (vitest: test-results/vitest.json and, for its `waiting` project when scripts/test.mjs
// runs the two at once, test-results/vitest-waiting.json; Playwright: test-results/playwright.json, pytest:
// test-results/pytest.xml, JUnit XML).
// Every skipped test is listed with its reason; a skip without one, a browser suite that did not run,
// or no test at all makes the run fail: a skip never counts as a pass. Last come the names of the
// failed tests, so they need no search through the runners' output above. Each runner's line ends with
// its wall time (test-results/timings.json, written by scripts/test.mjs; vitest's gives each project's
// when they ran at once), the total the whole run's, and the 10 slowest test files are printed and
// written to test-results/slowest.txt.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/** A report's absolute test-file path, relative to the project (where the runners ran). */
function relative(file) {
  return file.startsWith(process.cwd() + '/') ? file.slice(process.cwd().length + 1) : file;
}

function firstLine(text) {
  return String(text ?? '')
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim();
}

function read(file) {
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
}

const rows = [];
/** The failed tests' names, runner first ("vitest test/x.test.ts › suite › test"). */
const failures = [];
/** Skips that gave no reason: each one fails the run. */
let unexplained = 0;
/** vitest's report, the `waiting` project's (run beside it by scripts/test.mjs) added in. */
function readVitest() {
  const reports = ['test-results/vitest.json', 'test-results/vitest-waiting.json'].map(read).filter(Boolean);
  if (reports.length < 2) return reports[0];
  const sum = (key) => reports.reduce((total, report) => total + (report[key] ?? 0), 0);
  return {
    numPassedTests: sum('numPassedTests'),
    numFailedTests: sum('numFailedTests'),
    numPendingTests: sum('numPendingTests'),
    numTodoTests: sum('numTodoTests'),
    testResults: reports.flatMap((report) => report.testResults ?? []),
  };
}
const vitest = readVitest();
if (vitest) {
  // Vitest has no skip reason of its own: ours are in the title, "… (skipped: <reason>)".
  for (const file of vitest.testResults ?? []) {
    for (const test of file.assertionResults ?? []) {
      if (test.status !== 'skipped' && test.status !== 'pending' && test.status !== 'todo') continue;
      const reason = /\(skipped: (.+)\)$/.exec(test.title)?.[1];
      if (!reason) unexplained += 1;
      console.log(`skipped (vitest) ${test.fullName ?? test.title}: ${reason ?? 'no reason given (counted as a failure)'}`);
    }
  }
  for (const file of vitest.testResults ?? []) {
    const where = relative(file.name ?? '');
    const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failed) failures.push(`vitest ${where} › ${test.fullName ?? test.title}`);
    // A file that failed outside its tests (an import error, a failing hook) has no failed test to name.
    if (failed.length === 0 && file.status === 'failed') failures.push(`vitest ${where}: ${firstLine(file.message) || 'the file failed'}`);
  }
  rows.push({
    name: 'vitest',
    passed: vitest.numPassedTests,
    failed: vitest.numFailedTests,
    skipped: vitest.numPendingTests + (vitest.numTodoTests ?? 0),
  });
}
const playwright = read('test-results/playwright.json');
/** Skipped browser tests with their reasons: a skip must say why, and must not pass for a pass. */
function skippedWithReasons(suite, out = []) {
  for (const spec of suite.specs ?? []) {
    for (const test of spec.tests ?? []) {
      if (!(test.results ?? []).some((r) => r.status === 'skipped')) continue;
      const annotations = [...(test.annotations ?? []), ...(test.results ?? []).flatMap((r) => r.annotations ?? [])];
      const reasons = [...new Set(annotations.filter((a) => a.type === 'skip' && a.description).map((a) => a.description))];
      if (reasons.length === 0) unexplained += 1;
      out.push(`${spec.title}: ${reasons.join('; ') || 'did not run, no reason given (counted as a failure)'}`);
    }
  }
  for (const child of suite.suites ?? []) skippedWithReasons(child, out);
  return out;
}
/** Browser tests whose outcome was unexpected (failed, timed out), as "file › describe › title". */
function unexpected(suite, titles = [], out = []) {
  const here = suite.title ? [...titles, suite.title] : titles;
  for (const spec of suite.specs ?? []) {
    if ((spec.tests ?? []).some((test) => test.status === 'unexpected')) out.push([...here, spec.title].join(' › '));
  }
  for (const child of suite.suites ?? []) unexpected(child, here, out);
  return out;
}
if (playwright) {
  for (const suite of playwright.suites ?? []) for (const line of skippedWithReasons(suite)) console.log(`skipped (playwright) ${line}`);
  for (const suite of playwright.suites ?? []) for (const name of unexpected(suite)) failures.push(`playwright ${name}`);
  const s = playwright.stats;
  rows.push({ name: 'playwright', passed: s.expected + s.flaky, failed: s.unexpected, skipped: s.skipped });
}
/** The 10 slowest test files of vitest (wall time per file) and Playwright (its tests' time added up per file). */
function slowestFiles(vitestReport, playwrightReport) {
  const files = [];
  for (const file of vitestReport?.testResults ?? []) {
    if (file.startTime && file.endTime)
      files.push({ s: (file.endTime - file.startTime) / 1000, file: `vitest ${relative(file.name ?? '')}` });
  }
  const perFile = new Map();
  const add = (suite) => {
    for (const spec of suite.specs ?? []) {
      const ms = (spec.tests ?? []).flatMap((t) => t.results ?? []).reduce((sum, r) => sum + (r.duration ?? 0), 0);
      perFile.set(spec.file ?? suite.file, (perFile.get(spec.file ?? suite.file) ?? 0) + ms);
    }
    for (const child of suite.suites ?? []) add(child);
  };
  for (const suite of playwrightReport?.suites ?? []) add(suite);
  for (const [file, ms] of perFile) files.push({ s: ms / 1000, file: `playwright ${file}` });
  return files.sort((a, b) => b.s - a.s).slice(0, 10);
}
/** pytest's JUnit XML: the counts are attributes of its <testsuite> element (errors are failures too). */
const pytestXml = existsSync('test-results/pytest.xml') ? readFileSync('test-results/pytest.xml', 'utf8') : undefined;
if (pytestXml) {
  const suite = /<testsuite\b[^>]*>/.exec(pytestXml)?.[0] ?? '';
  const count = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const failed = count('failures') + count('errors');
  rows.push({ name: 'pytest', passed: count('tests') - failed - count('skipped'), failed, skipped: count('skipped') });
  for (const [, attributes, body] of pytestXml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    if (!/<(failure|error)\b/.test(body ?? '')) continue;
    const attribute = (name) => new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1] ?? '';
    failures.push(`pytest ${[attribute('classname'), attribute('name')].filter(Boolean).join('::')}`);
  }
}
if (existsSync('test-results/chromium-missing')) {
  console.log('playwright: did not run: no Chromium could be found or installed (counted as a failure)');
  rows.push({ name: 'playwright', passed: 0, failed: 1, skipped: 0 });
}
const total = rows.reduce((t, r) => ({ passed: t.passed + r.passed, failed: t.failed + r.failed, skipped: t.skipped + r.skipped }), {
  passed: 0,
  failed: 0,
  skipped: 0,
});
const timings = read('test-results/timings.json') ?? {};
const took = (name) => (timings[name] === undefined ? '' : ` in ${timings[name]} s`);
/** vitest's time, with its two projects' when they ran at once ("in 412 s (main 412 s, waiting 180 s)"). */
const tookVitest = () =>
  took('vitest') +
  (timings['vitest-main'] === undefined ? '' : ` (main ${timings['vitest-main']} s, waiting ${timings['vitest-waiting']} s)`);
const slowest = slowestFiles(vitest, playwright);
if (slowest.length > 0) {
  const lines = slowest.map(({ s, file }) => `${s.toFixed(1)} s  ${file}`);
  writeFileSync('test-results/slowest.txt', lines.join('\n') + '\n');
  console.log(`the ${lines.length} slowest test files (test-results/slowest.txt):\n  ${lines.join('\n  ')}`);
}
for (const r of rows)
  console.log(
    `${r.name}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped${r.name === 'vitest' ? tookVitest() : took(r.name)}`,
  );
console.log(`total: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped${took('all')}`);
if (unexplained > 0) console.log(`${unexplained} test(s) skipped or not run without a reason: counted as failures`);
if (failures.length > 0) {
  console.log(`failed (${failures.length}):`);
  for (const name of failures) console.log(`  ✗ ${name}`);
}
process.exitCode = total.failed > 0 || total.passed === 0 || unexplained > 0 ? 1 : 0;
