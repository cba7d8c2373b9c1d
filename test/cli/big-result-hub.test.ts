/**
 * A result over the inline limit (kept on disk by the hub, summarised in snapshots) comes back whole
 * through every command that prints a result: run --json, wait --json, show and show --json — with a hub running.
 */
import { describe, expect, test } from 'vitest';
import { fixture } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';

describe('a big result on the hub', () => {
  test('run --json, wait --json, show and show --json print it whole', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const bytes = 300_000;
    const run = await cli(['run', '--json', '--input', JSON.stringify({ bytes }), '--', fixture('big-result.mjs')], hub.env);
    expect(run.code, run.stderr).toBe(0);
    const payload = JSON.parse(run.stdout) as { task_id: string; data: { text: string } };
    expect(payload.data.text).toHaveLength(bytes);
    const waited = await cli(['wait', '--json', payload.task_id], hub.env);
    expect(waited.code, waited.stderr).toBe(0);
    expect((JSON.parse(waited.stdout) as { data: { text: string } }).data.text).toBe(payload.data.text);
    const shown = await cli(['show', payload.task_id], hub.env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(payload.data.text.slice(-200));
    // --json too: the snapshot carries only a summary; the result stored on disk is read into it.
    const json = await cli(['show', '--json', payload.task_id], hub.env);
    expect(json.code, json.stderr).toBe(0);
    const details = JSON.parse(json.stdout) as { task: { result?: { data: { text: string } }; resultSummary?: { bytes: number } } };
    expect(details.task.resultSummary?.bytes).toBeGreaterThan(bytes);
    expect(details.task.result?.data.text).toBe(payload.data.text);
  });
});
