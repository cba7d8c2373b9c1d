/**
 * The task commands fail through the one error table (src/model/errors.ts): one line on stderr, or
 * with `--json` one object that carries the error's code; the exit code is the table's for that
 * code (a bad argument 2, the rest 1). Real CLI processes over a history on disk, no hub.
 */
import path from 'node:path';
import { expect, test } from 'vitest';
import { writeHistory } from '../../bench/lib/history.js';
import { tempDir } from '../helpers/core.js';
import { cli } from '../hub/control/hub-process.js';

function noHub(): { env: NodeJS.ProcessEnv; dataDir: string } {
  const dir = tempDir('bc-ce-');
  const env = {
    ...process.env,
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    BACKCHANNEL_CONTROL: path.join(dir, 'control.sock'),
  };
  return { env, dataDir: path.join(dir, 'state', 'backchannel') };
}

test('an unknown id: not_found in the JSON error, exit 1', async () => {
  const { env } = noHub();
  const { code, stdout } = await cli(['show', '0190dead', '--json'], env);
  expect(code).toBe(1);
  expect(JSON.parse(stdout)).toEqual({ status: 'error', code: 'not_found', message: 'No task with an id starting with "0190dead"' });
});

test('an id prefix that matches two tasks: invalid_request, exit 2, and the one line says what to do', async () => {
  const { env, dataDir } = noHub();
  const ids: string[] = writeHistory(dataDir, { count: 2 });
  const shared = ids[0]!.slice(0, 4);
  expect(ids[1]!.startsWith(shared)).toBe(true);
  const { code, stderr } = await cli(['show', shared], env);
  expect(code).toBe(2);
  const shorts = ids.map((id) => id.replace(/-/g, '').slice(-12)).join(', ');
  expect(stderr).toBe(`backchannel show: "${shared}" matches 2 tasks (short ids ${shorts}); give more of the id\n`);
});

test('a command that needs a hub, without one: conflict, exit 1, one line', async () => {
  const { env } = noHub();
  const { code, stdout, stderr } = await cli(['cancel', '0190dead'], env);
  expect(code).toBe(1);
  expect(stdout).toBe('');
  expect(stderr).toMatch(/^backchannel cancel: no Backchannel hub is running .*this command needs one\n$/);
});
