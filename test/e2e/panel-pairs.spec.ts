/**
 * The details pane shows one task and nothing else: open tasks in every state one after the other —
 * every ordered pair of states — and check that nothing of the task shown before is left (its
 * failure box, stderr tail, question and answer buttons, result, meta, command or log). Each task's
 * sub-agent puts a marker into everything the panel can show of it (test/e2e/fixtures/marked-agent.mjs).
 */
import { expect, test, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

const AGENT = path.join(ROOT, 'test', 'e2e', 'fixtures', 'marked-agent.mjs');
const STATES = ['queued', 'running', 'asking', 'retrying', 'succeeded', 'failed', 'cancelled', 'interrupted'] as const;
type State = (typeof STATES)[number];
/** The marker of a state's task; no marker is part of another. */
const marker = (state: State): string => `mark-${state}-task`;
/** The sections a task in that state must show (its own content, with its own marker). */
const OWN_SECTION: Partial<Record<State, string>> = {
  asking: '.details .question',
  failed: '.details .failure',
  succeeded: '.details .result',
  running: '.details .result',
};

let dir: string;
let serve: Serve | undefined;
let page: Page;

// One page walks the whole route; the walk is cut into tests of ROUTE_STEPS steps, so each has a
// bounded amount of work and its own timeout on a loaded machine (it was one 120 s test).
test.describe.configure({ mode: 'serial' });

test.afterAll(async () => {
  await page?.close();
  await serve?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A route through every ordered pair of distinct states exactly once (an Euler circuit of the complete digraph). */
function everyPair(): State[] {
  const unused = new Map<State, State[]>(STATES.map((s) => [s, STATES.filter((t) => t !== s)]));
  const stack: State[] = [STATES[0]];
  const route: State[] = [];
  while (stack.length) {
    const top = stack.at(-1)!;
    const next = unused.get(top)!.shift();
    if (next) stack.push(next);
    else route.push(stack.pop()!);
  }
  return route.reverse();
}

const row = (page: Page, state: State) => page.locator('li.task', { has: page.locator('.task-label', { hasText: marker(state) }) });

async function submit(server: Serve, state: State, mode: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { id } = await server.api<{ id: string }>('POST', '/api/tasks', {
    command: process.execPath,
    args: [AGENT, `--marker=${marker(state)}`, `--mode=${mode}`],
    label: marker(state),
    ...extra,
  });
  return id;
}

/** The route through every ordered pair of states, walked ROUTE_STEPS steps a test. */
const ROUTE = everyPair();
const ROUTE_STEPS = 6;

test.beforeAll(async ({ browser }) => {
  test.setTimeout(240_000);
  page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
  dir = scratchDir();
  const dataDir = path.join(dir, 'data');

  // A server killed while a task runs leaves that task "interrupted" in its history.
  const killed = await startServe(dataDir);
  const doomed = await submit(killed, 'interrupted', 'forever');
  await expect.poll(async () => (await killed.api<{ task: { state: string } }>('GET', `/api/tasks/${doomed}`)).task.state).toBe('running');
  // Killed once the journal holds the attempt: what history can show of a task is what reached the disk
  // (the journal is written in batches; on a loaded machine the kill came first and the row never showed).
  const journal = path.join(dataDir, 'journal.ndjson');
  await expect
    .poll(() => fs.existsSync(journal) && fs.readFileSync(journal, 'utf8').includes(`"e":"attempt","id":"${doomed}"`), {
      message: 'the attempt in the journal',
    })
    .toBe(true);
  await killed.stop('SIGKILL');

  serve = await startServe(dataDir, ['--concurrency', '8']);
  await page.goto(serve.url);
  await submit(serve, 'running', 'forever');
  await submit(serve, 'asking', 'ask');
  // Crashes at once every attempt; the backoff doubles, so after a few attempts it is retrying for long.
  await submit(serve, 'retrying', 'crash', { retries: 20 });
  await submit(serve, 'succeeded', 'succeed');
  await submit(serve, 'failed', 'fail');
  const cancelled = await submit(serve, 'cancelled', 'forever');
  await expect(row(page, 'cancelled').locator('.badge')).toHaveText('Running');
  // Cancel only once the agent has said it started, so its log has its own line to check for.
  await expect
    .poll(async () => {
      const { log } = await serve.api<{ log: { text: string }[] }>('GET', `/api/tasks/${cancelled}`);
      return log.some((line) => line.text.includes(`${marker('cancelled')} starts`));
    })
    .toBe(true);
  await serve.api('POST', `/api/tasks/${cancelled}/cancel`);
  await page.locator('#pause').click();
  await expect(page.locator('#paused-banner')).toBeVisible();
  await submit(serve, 'queued', 'succeed');

  const labels: Record<State, string> = {
    queued: 'Queued',
    running: 'Running',
    asking: 'Needs answer',
    retrying: 'Retrying',
    succeeded: 'Succeeded',
    failed: 'Failed',
    cancelled: 'Cancelled',
    interrupted: 'Interrupted',
  };
  for (const state of STATES) await expect(row(page, state).locator('.badge')).toHaveText(labels[state], { timeout: 30_000 });

  expect(ROUTE).toHaveLength(STATES.length * (STATES.length - 1) + 1);
});

let previous: State | undefined;

for (let from = 0; from < ROUTE.length; from += ROUTE_STEPS) {
  const steps = ROUTE.slice(from, from + ROUTE_STEPS);
  test(`opening tasks one after another never shows anything of the task opened before (route steps ${from + 1}–${from + steps.length} of ${ROUTE.length})`, async () => {
    test.setTimeout(90_000);
    for (const state of steps) await open(state);
  });
}

/** Opens the task in `state` right after `previous` and checks that the pane shows it alone. */
async function open(state: State): Promise<void> {
  await row(page, state).click();
  const own = OWN_SECTION[state];
  const args = { own, mine: marker(state), others: STATES.filter((s) => s !== state).map(marker) };
  // Waited for in the page, re-checked each animation frame (the route has 57 steps: a look
  // from the test every 25 ms cost a round trip each, which a loaded machine could not afford):
  // the pane shows this task with its own log loaded.
  await page.waitForFunction(
    ({ own, mine }) => {
      const text = (selector: string) => document.querySelector(selector)?.textContent ?? '';
      const log = text('.details .log');
      // (A restarted server keeps no log of the interrupted task; a queued one has none yet.)
      const logLoaded = log !== '(loading the log…)' && (log.includes(`${mine} starts`) || log.startsWith('(no output'));
      return text('.details-title') === mine && (own ? text(own).includes(mine) : true) && logLoaded;
    },
    args,
    { polling: 'raf', timeout: 20_000 },
  );
  // Then nothing of any other task may be anywhere in it.
  const seen = await page.evaluate(({ others }) => {
    const text = (selector: string) => document.querySelector(selector)?.textContent ?? '';
    const hidden = (selector: string) => (document.querySelector(selector) as HTMLElement | null)?.hidden ?? true;
    return {
      foreign: others.filter((marker) => text('#details-pane').includes(marker)),
      question: !hidden('.details .question'),
      failure: !hidden('.details .failure'),
    };
  }, args);
  const where = `details of ${state} after ${previous ?? 'nothing'}`;
  expect(seen.foreign, where).toEqual([]);
  expect(seen.question, where).toBe(state === 'asking');
  if (state === 'queued' || state === 'running' || state === 'asking' || state === 'succeeded') expect(seen.failure, where).toBe(false);
  previous = state;
}
