/**
 * The Chromium the panel benchmarks drive: found, or installed, exactly as `npm test` does
 * (scripts/find-chromium.mjs: CHROMIUM_PATH, the system's chromium/chrome, Playwright's cache, then
 * `npx playwright install chromium`, then apt-get as root on Debian).
 */
import { ensureChromium } from '../../scripts/find-chromium.mjs';
import { log } from './env.js';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** Launches headless Chromium with playwright-core; throws, saying what to install, when there is none. */
export async function launchChromium() {
  const executablePath = ensureChromium(log);
  if (!executablePath) throw new Error('no Chromium found or installed (set CHROMIUM_PATH, or install the chromium package)');
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}
