#!/usr/bin/env node
// Prints one "N passed, N failed, N skipped" line per runner and a total, from the reports the test
// runners wrote (vitest: test-results/vitest.json, Playwright: test-results/playwright.json, pytest:
// test-results/pytest.xml, JUnit XML).
// Exits 1 if any test failed or no test ran at all.
import { existsSync, readFileSync } from 'node:fs';

function read(file) {
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
}

const rows = [];
const vitest = read('test-results/vitest.json');
if (vitest) {
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
      const reasons = (test.annotations ?? []).filter((a) => a.type === 'skip' && a.description).map((a) => a.description);
      out.push(`${spec.title}: ${reasons.join('; ') || 'no reason given'}`);
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
const total = rows.reduce((t, r) => ({ passed: t.passed + r.passed, failed: t.failed + r.failed, skipped: t.skipped + r.skipped }), {
  passed: 0,
  failed: 0,
  skipped: 0,
});
for (const r of rows) console.log(`${r.name}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped`);
console.log(`total: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exitCode = total.failed > 0 || total.passed === 0 ? 1 : 0;
