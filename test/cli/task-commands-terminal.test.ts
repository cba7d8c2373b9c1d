/**
 * Issue 23 item 4, real processes on a real pseudo-terminal (`script`): agent text shown by `show`,
 * `logs`, `logs -f`, `tasks` and `stats` cannot steer the terminal (retitle it, clear it, overwrite a
 * line with a fake "OK"), as `run` already could not. Piped output and `--json` stay byte for byte.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, waitFor } from '../helpers/core.js';
import { BIN, cli, hubEnv, startHub } from '../hub/control/hub-process.js';

const EVIL = '\u001b]0;pwned\u0007\u001b[2J\r\u001b[32mOK all tests passed\u001b[0m\u009b31m';
/** Control characters a terminal acts on; `script` itself turns every newline into \r\n. */
const FOREIGN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;

/** `backchannel <args>` on a pseudo-terminal (stdout and stderr are the terminal); what it showed (so far: `onShown`). */
function onTerminal(
  args: string[],
  env: NodeJS.ProcessEnv,
  onShown?: (shown: string) => void,
): Promise<{ code: number | null; shown: string }> {
  const line = [process.execPath, BIN, ...args].map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-qefc', line, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let shown = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      shown += chunk;
      onShown?.(shown);
    });
    child.on('close', (code) => resolve({ code, shown }));
  });
}

function expectNeutralised(shown: string, what: string): void {
  expect({ what, foreign: shown.match(FOREIGN) }).toEqual({ what, foreign: null });
  expect(shown).toContain('OK all tests passed');
  expect(shown).toContain('\uFFFD]0;pwned\uFFFD');
}

describe.skipIf(spawnSync('script', ['--version']).error)('task commands on a terminal', () => {
  test('show, logs, logs -f, tasks and stats neutralise agent escape sequences on a TTY; piped and --json output is exact', async () => {
    const hub = hubEnv();
    const gate = path.join(hub.dir, 'gate');
    await startHub(hub);
    const submitted = await cli(
      [
        'run',
        '--detach',
        '--label',
        `label ${EVIL}`,
        '--input',
        JSON.stringify({ gate }),
        '--',
        process.execPath,
        fixture('round3/terminal-attack-slow.mjs'),
      ],
      hub.env,
    );
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    // `logs -f` on a terminal while the agent runs: it sees the first line, then the second once the gate opens.
    await waitFor(
      async () => ((await cli(['logs', id], hub.env)).stdout.includes('first') ? true : undefined),
      'the first log line',
      20_000,
      200,
    );
    let shownSoFar = '';
    const following = onTerminal(['logs', '-f', id], hub.env, (shown) => (shownSoFar = shown));
    await waitFor(() => shownSoFar.includes('first'), '`logs -f` to show the first line', 20_000);
    writeFileSync(gate, '');
    const followed = await following;
    expect(followed.code).toBe(0);
    expectNeutralised(followed.shown, 'logs -f');
    expect(followed.shown).toContain('second');

    for (const args of [['show', id], ['logs', id], ['tasks'], ['stats', '--by', 'model', '--data-dir', path.join(hub.dir, 'data')]]) {
      const run = await onTerminal(args, hub.env);
      expect({ args, code: run.code }).toEqual({ args, code: 0 });
      expectNeutralised(run.shown, args.join(' '));
    }

    // Piped: byte for byte, and --json is the exact snapshot.
    expect((await cli(['logs', id], hub.env)).stdout).toContain(`first ${EVIL}\n`);
    expect((await cli(['show', id], hub.env)).stdout).toContain(`stderr ${EVIL}`);
    expect((await cli(['tasks'], hub.env)).stdout).toContain(`label ${EVIL}\n`);
    expect((await cli(['stats', '--by', 'model', '--data-dir', path.join(hub.dir, 'data')], hub.env)).stdout).toContain(`model ${EVIL}`);
    const json = JSON.parse((await cli(['show', '--json', id], hub.env)).stdout) as { task: { label: string; result: { data: unknown } } };
    expect(json.task.label).toBe(`label ${EVIL}`);
    expect(json.task.result.data).toEqual({ text: EVIL });
    const onTty = await onTerminal(['show', '--json', id], hub.env);
    expect(JSON.parse(onTty.shown.replace(/\r\n/g, '\n')).task.label).toBe(`label ${EVIL}`);
  });
});
