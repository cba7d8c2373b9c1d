/**
 * A sub-agent's question seen and answered from the terminal, against a real hub: `tasks` says the
 * task needs an answer, `show` gives the question with its numbered choices, and `answer` takes a
 * choice or its number, refuses anything else with the list, and says what is missing.
 */
import { describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { fixture, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';

describe('a question from the terminal', { timeout: 120_000 }, () => {
  test('tasks shows "needs answer", show gives the choices, answer takes a number and refuses a non-choice', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const id = (await cli(['run', '--detach', '--', fixture('asker.mjs')], hub.env)).stdout.trim();
    await waitFor(async () => {
      const { stdout } = await cli(['tasks', '--json'], hub.env);
      return (JSON.parse(stdout) as TaskSnapshot[]).find((t) => t.id === id)?.pendingQuestion;
    }, 'the question');

    const listed = await cli(['tasks'], hub.env);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+needs answer\\s`));

    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/question\s+Which branch should I use\?/);
    expect(shown.stdout).toMatch(/choices\s+1\. "main", 2\. "dev"/);
    expect(shown.stdout).toContain(`backchannel answer ${id} <choice or its number>`);

    const missing = await cli(['answer', id], hub.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('backchannel answer: missing the answer text');

    const wrong = await cli(['answer', id, 'maybe'], hub.env);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('"maybe" is not one of the choices: 1. "main", 2. "dev"');

    // The refused answer left the question waiting: the number of a choice answers it.
    expect((await cli(['answer', id, '2'], hub.env)).code).toBe(0);
    const waited = await cli(['wait', '--json', id], hub.env);
    expect(JSON.parse(waited.stdout)).toMatchObject({ data: { answer: 'dev' } });
  });

  test('answer with no id at all still says the id is missing', async () => {
    const none = await cli(['answer'], hubEnv().env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('backchannel answer: missing the task id');
  });
});
