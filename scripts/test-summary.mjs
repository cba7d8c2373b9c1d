#!/usr/bin/env node
// Prints one "N passed, N failed, N skipped" line per runner and a total, from the reports the test
// runners wrote (vitest: test-results/vitest.json, Playwright: test-results/playwright.json, pytest:
// test-results/pytest.xml, JUnit XML).
// Every skipped test is listed with its reason; a skip without one, a browser suite that did not run,
// or no test at all makes the run fail: a skip never counts as a pass.
import { existsSync, readFileSync } from 'node:fs';

function read(file) {
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
}

const rows = [];
/** Skips that gave no reason: each one fails the run. */
let unexplained = 0;
const vitest = read('test-results/vitest.json');
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
if (playwright) {
  for (const suite of playwright.suites ?? []) for (const line of skippedWithReasons(suite)) console.log(`skipped (playwright) ${line}`);
  const s = playwright.stats;
  rows.push({ name: 'playwright', passed: s.expected + s.flaky, failed: s.unexpected, skipped: s.skipped });
}
/** pytest's JUnit XML: the counts are attributes of its <testsuite> element (errors are failures too). */
const pytestXml = existsSync('test-results/pytest.xml') ? readFileSync('test-results/pytest.xml', 'utf8') : undefined;
if (pytestXml) {
  const suite = /<testsuite\b[^>]*>/.exec(pytestXml)?.[0] ?? '';
  const count = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const failed = count('failures') + count('errors');
  rows.push({ name: 'pytest', passed: count('tests') - failed - count('skipped'), failed, skipped: count('skipped') });
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
for (const r of rows) console.log(`${r.name}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped`);
console.log(`total: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
if (unexplained > 0) console.log(`${unexplained} test(s) skipped or not run without a reason: counted as failures`);
process.exitCode = total.failed > 0 || total.passed === 0 || unexplained > 0 ? 1 : 0;
