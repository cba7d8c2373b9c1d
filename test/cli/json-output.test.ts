/**
 * Y51 (issue 47): a lone UTF-16 surrogate sent by a caller — in a task's label or input, over the
 * panel's API as JSON (`"\ud800"`) — must not break the JSON the hub and the CLI print: `tasks --json`
 * and `GET /api/tasks` parse in jq (a strict parser), and the label shows U+FFFD in its place.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { wellFormedJson } from '../../src/model/well-formed.js';
import { fixture, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';

const jqMissing = spawnSync('jq', ['--version']).error !== undefined;

/** What jq makes of `text`: its exit code and the value it read back. */
function jq(text: string): { status: number | null; value: unknown } {
  const run = spawnSync('jq', ['-c', '.'], { input: text, encoding: 'utf8' });
  return { status: run.status, value: run.status === 0 ? JSON.parse(run.stdout) : run.stderr };
}

describe('JSON output with lone surrogates (Y51)', () => {
  test('wellFormedJson writes each lone surrogate as U+FFFD, in keys and values, and leaves pairs and escaped backslashes', () => {
    const value = { 'k\udc00': ['a\ud800b', '😀', '\\ud800 as text', '\\\ud800'] };
    const text = wellFormedJson(value);
    expect(JSON.parse(text)).toEqual({ 'k\ufffd': ['a\ufffdb', '😀', '\\ud800 as text', '\\\ufffd'] });
    expect(wellFormedJson({ fine: 'é😀' })).toBe(JSON.stringify({ fine: 'é😀' }));
  });

  test.skipIf(jqMissing)(
    `a task labelled and fed a lone surrogate over the panel API: tasks --json and GET /api/tasks parse in jq${jqMissing ? ' (skipped: jq is not installed)' : ''}`,
    async () => {
      const hub = hubEnv();
      const proc = await startHub(hub);
      const url = new URL(proc.url);
      const token = url.searchParams.get('token')!;
      // The body is JSON text with the escape itself: what a caller's JSON.stringify of a cut string sends.
      const body = `{"command": ${JSON.stringify(fixture('quick.mjs'))}, "label": "cut \\ud83d here", "input": {"s": "\\udc00"}}`;
      const submitted = await fetch(`${url.origin}/api/tasks?token=${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(submitted.status).toBe(200);
      const listed = await waitFor(
        async () => {
          const run = await cli(['tasks', '--json'], hub.env);
          return run.code === 0 && run.stdout.includes('succeeded') && run.stdout;
        },
        'the task to succeed',
        30_000,
        200,
      );
      const fromCli = jq(listed);
      expect(fromCli.status).toBe(0);
      expect(fromCli.value).toMatchObject([{ label: 'cut \ufffd here', state: 'succeeded' }]);
      const api = await (await fetch(`${url.origin}/api/tasks?token=${token}`)).text();
      const fromApi = jq(api);
      expect(fromApi.status).toBe(0);
      expect(JSON.stringify(fromApi.value)).toContain('cut \ufffd here');
    },
  );
});
