import { defineConfig } from '@playwright/test';
import { findChromium } from './scripts/find-chromium.mjs';

/**
 * Browser tests of the real panel. The `panel` project drives `backchannel serve` (real broker,
 * real sub-agent processes) in the Chromium scripts/find-chromium.mjs finds (CHROMIUM_PATH, the
 * system's, or Playwright's own cache); `npm test` installs one first when there is none.
 * The `electron` project runs only where an Electron binary is installed (it skips with a reason otherwise).
 */
const chromium: string | undefined = process.env.CHROMIUM_PATH ?? findChromium();

export default defineConfig({
  testDir: 'test/e2e',
  // A run-private state and config directory: no spec reaches the user's own hub or history.
  globalSetup: './test/global-setup.ts',
  outputDir: 'test-results/e2e',
  timeout: 90_000,
  expect: { timeout: 20_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  use: {
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    viewport: { width: 1100, height: 720 },
  },
  projects: [
    {
      name: 'panel',
      testMatch: /(panel.*|insights|hub|coding-review)\.spec\.ts/,
      use: {
        browserName: 'chromium',
        launchOptions: {
          ...(chromium ? { executablePath: chromium } : {}),
          args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
        },
      },
    },
    { name: 'electron', testMatch: /electron\.spec\.ts/ },
  ],
});
