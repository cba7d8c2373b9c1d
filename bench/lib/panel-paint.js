/**
 * The panel's first paint in headless Chromium (issue 22 item 4), shared by the big-history and
 * growth benches.
 */
import { launchChromium } from './browser.js';
import { median } from './stats.js';

/**
 * Page loads of the panel, timed in the page from navigation start (performance.timeOrigin): when the
 * first task row is in the DOM, when the frame after it starts (the row has been painted by then),
 * and when all rows are. Playwright's own waits only synchronise: `waitForSelector` polls from Node
 * with a growing interval (0, 20, 50, 100, 100, then 500 ms), so what it sees is up to 500 ms late —
 * shown beside, as `polledMs`.
 */
export async function panelPaint(url, runs, tasks) {
  const browser = await launchChromium();
  try {
    const firsts = [];
    const inDom = [];
    const alls = [];
    const readies = [];
    const polled = [];
    for (let i = 0; i < runs + 1; i++) {
      const page = await browser.newPage();
      await page.addInitScript((tasks) => {
        const marks = (window.__benchMarks = {});
        new MutationObserver((_, observer) => {
          if (marks.row === undefined && document.querySelector('li.task')) {
            marks.row = performance.now();
            // Asked for from within the frame that added the row: runs in the next one, after it painted.
            requestAnimationFrame(() => (marks.painted = performance.now()));
          }
          if (marks.row !== undefined && document.querySelectorAll('li.task').length >= tasks) {
            marks.all = performance.now();
            observer.disconnect();
          }
        }).observe(document, { childList: true, subtree: true });
      }, tasks);
      const t0 = performance.now();
      await page.goto(url, { waitUntil: 'commit' });
      await page.waitForSelector('li.task', { timeout: 30_000 });
      const seen = performance.now() - t0;
      await page.waitForFunction(() => window.__benchMarks.all !== undefined && window.__benchMarks.painted !== undefined, null, {
        timeout: 30_000,
      });
      const marks = await page.evaluate(() => ({
        ...window.__benchMarks,
        // When the page itself was ready (its script run), before any task reached it.
        ready: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
      }));
      await page.close();
      // The first load also warms the browser: not counted.
      if (i > 0) {
        firsts.push(marks.painted);
        inDom.push(marks.row);
        alls.push(marks.all);
        readies.push(marks.ready);
        polled.push(seen);
      }
    }
    return { first: median(firsts), inDom: median(inDom), all: median(alls), ready: median(readies), polled: median(polled) };
  } finally {
    await browser.close();
  }
}
