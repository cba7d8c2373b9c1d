/**
 * The Electron app end to end: tray menu → panel window → a task → tray counts → quit cancels
 * running tasks. Runs where Electron's binary is installed and a display exists (`xvfb-run` on a
 * server); elsewhere every test is skipped with the reason, and reported as skipped, not passed.
 */
import { _electron as electron, expect, test, type ElectronApplication } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import type {} from '../../src/bridge/contract.js';
import { AGENT, ROOT, scratchDir } from './serve.js';

/** Same check as scripts/start.js, without `require('electron')` (which would try to download the binary). */
function electronBinary(): { path?: string; reason?: string } {
  const dir = path.join(ROOT, 'node_modules', 'electron');
  const pathFile = path.join(dir, 'path.txt');
  if (!fs.existsSync(pathFile))
    return {
      // Say why only where it is known: the variable set here, or else a download that did not happen.
      reason: `the electron package was installed without its binary (${
        process.env.ELECTRON_SKIP_BINARY_DOWNLOAD ? 'ELECTRON_SKIP_BINARY_DOWNLOAD is set' : 'its download was skipped or failed'
      }); run \`npx install-electron\` where the network allows it`,
    };
  const binary = path.join(dir, 'dist', fs.readFileSync(pathFile, 'utf8').trim());
  return fs.existsSync(binary) ? { path: binary } : { reason: `Electron's binary is missing at ${binary}` };
}

const binary = electronBinary();
const noDisplay = process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY;
test.skip(!binary.path, `Electron spec skipped: ${binary.reason}`);
test.skip(noDisplay, 'Electron spec skipped: no display (run the suite under `xvfb-run -a`)');

/** Our environment plus the test hooks, minus ELECTRON_RUN_AS_NODE (Electron checks its presence, not its value). */
function testEnv(): Record<string, string> {
  const env: Record<string, string> = { BACKCHANNEL_TEST_HOOKS: '1' };
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && name !== 'ELECTRON_RUN_AS_NODE') env[name] = value;
  return env;
}

interface TrayState {
  tooltip: string;
  menu: string[];
}

let app: ElectronApplication | undefined;
let userData: string | undefined;

test.afterEach(async () => {
  await app?.close().catch(() => {});
  if (userData) fs.rmSync(userData, { recursive: true, force: true });
});

test('tray menu opens the panel, a task runs in it, the tray counts it, and quitting cancels what still runs', async () => {
  userData = scratchDir();
  app = await electron.launch({
    executablePath: binary.path,
    args: [path.join(ROOT, 'dist', 'main', 'electron', 'main.js')],
    env: { ...testEnv(), BACKCHANNEL_USER_DATA: userData },
  });
  const tray = (): Promise<TrayState> =>
    app!.evaluate(() => (globalThis as unknown as { __backchannelTest: { tray(): TrayState } }).__backchannelTest.tray());
  await expect
    .poll(async () => (await tray()).menu)
    .toEqual(expect.arrayContaining(['Open panel', 'Recent tasks', 'Pause queue', 'Open log file', 'Quit Backchannel']));

  const windowOpened = app.waitForEvent('window');
  await app.evaluate(() =>
    (globalThis as unknown as { __backchannelTest: { clickMenuItem(l: string): boolean } }).__backchannelTest.clickMenuItem('Open panel'),
  );
  const page = await windowOpened;
  await expect(page.locator('#empty')).toBeVisible();
  expect(page.url()).toBe('backchannel://panel/index.html');

  // Secure defaults, and the page sees the bridge and nothing else.
  const prefs = await app.evaluate(() =>
    (globalThis as unknown as { __backchannelTest: { webPreferences(): Record<string, unknown> } }).__backchannelTest.webPreferences(),
  );
  expect(prefs).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false });
  expect(
    await page.evaluate(() => [
      typeof window.backchannel,
      typeof (window as unknown as { require?: unknown }).require,
      typeof (window as unknown as { process?: unknown }).process,
      typeof (window as unknown as { ipcRenderer?: unknown }).ipcRenderer,
    ]),
  ).toEqual(['object', 'undefined', 'undefined', 'undefined']);
  expect((await page.evaluate(() => window.backchannel.info())).mode).toBe('electron');

  // A task from a preset, through the panel.
  await page.locator('#new-task').click();
  await page.locator('#new-args').fill('--mode=progress\n--steps=5\n--interval=100');
  await page.locator('#new-label').fill('electron task');
  await page.getByRole('button', { name: 'Start task' }).click();
  const row = page.locator('li.task', { hasText: 'electron task' });
  await expect(row.locator('.badge')).toHaveText('Succeeded');
  await expect.poll(async () => (await tray()).menu.some((label) => label.startsWith('Recent tasks > ✓ electron task'))).toBe(true);

  // A running task shows in the tooltip, and quitting cancels it and ends its process.
  const { id } = await page.evaluate(
    (agent) => window.backchannel.submit({ command: agent, args: ['--mode=forever'], label: 'still running' }),
    AGENT,
  );
  await expect.poll(async () => (await tray()).tooltip).toContain('1 running');
  const pid = await page.evaluate(async (taskId) => (await window.backchannel.getTask(taskId)).task.pid, id);
  expect(pid).toBeGreaterThan(0);
  await app.close();
  app = undefined;
  await expect
    .poll(() => {
      try {
        process.kill(pid!, 0);
        return 'alive';
      } catch {
        return 'gone';
      }
    })
    .toBe('gone');
});
