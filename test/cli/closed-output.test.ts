/**
 * A closed stdout is a normal end for every command (issue 25): `backchannel show <id> | head -5`
 * ends with 0 and no EPIPE stack, and `backchannel serve 2>&1 | tee log` then Ctrl-C (which reaches
 * tee too) shuts the hub down as Ctrl-C alone does — its running task cancelled, not recorded
 * `interrupted`; its control socket removed; its agent gone — instead of dying on the EPIPE of its
 * own "stopping…" line. The reader here is the test closing its end of the child's pipes.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, isAlive, waitFor } from '../helpers/core.js';
import { cli, hubEnv, printed, start } from '../hub/control/hub-process.js';
import { writeJournal } from '../insights/generate.js';

/** A history of `count` finished tasks: its listing is well over a pipe's 64 KiB. */
function bigHistory(dataDir: string, count: number): string[] {
  const tasks = Array.from({ length: count }, (_, i) => ({
    agent: `agent-${i}.mjs`,
    label: `task ${i} `.padEnd(200, '·'),
    endedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + i * 1000).toISOString(),
    durationMs: 1200,
  }));
  return writeJournal(dataDir, tasks).map((task) => task.id);
}

describe('a closed stdout ends a command normally', () => {
  test('tasks, show and stats into a reader that is already gone exit 0 with nothing on stderr', async () => {
    const { dir, env } = hubEnv();
    delete env.BACKCHANNEL_CONTROL;
    const ids = bigHistory(path.join(dir, 'state', 'backchannel'), 300);
    for (const args of [['tasks', '--json'], ['tasks'], ['show', ids[0]!], ['stats']]) {
      const proc = start(args, env);
      proc.child.stdout!.destroy();
      expect({ args, code: await proc.exited, stderr: proc.stderr() }).toEqual({ args, code: 0, stderr: '' });
    }
  });

  test('serve 2>&1 | tee, then Ctrl-C: the hub shuts down (task cancelled, control socket removed, agent gone) and exits 0', async () => {
    const hub = hubEnv();
    const serve = start(['serve', '--port', '0'], hub.env);
    await printed(serve, /Backchannel panel: (\S+)/, 'serve to print its URL');
    const run = await cli(['run', '--detach', '--json', '--', process.execPath, fixture('cancellable.mjs')], hub.env);
    expect(run.code).toBe(0);
    const id = (JSON.parse(run.stdout) as { task_id: string }).task_id;
    const pid = await waitFor(async () => {
      const shown = JSON.parse((await cli(['show', '--json', id], hub.env)).stdout) as { task: { state: string; pid?: number } };
      return shown.task.state === 'running' && shown.task.pid;
    }, 'the agent to run');
    expect(existsSync(hub.socket)).toBe(true);

    // tee is gone (its end of the pipe closed), and the same Ctrl-C reaches the hub.
    serve.child.stdout!.destroy();
    serve.child.stderr!.destroy();
    serve.child.kill('SIGINT');
    expect(await serve.exited).toBe(0);
    expect(existsSync(hub.socket)).toBe(false);
    expect(isAlive(pid)).toBe(false);
    const after = await cli(['tasks', '--json'], hub.env);
    expect((JSON.parse(after.stdout) as Array<{ id: string; state: string }>).map((t) => [t.id, t.state])).toEqual([[id, 'cancelled']]);
  });
});
