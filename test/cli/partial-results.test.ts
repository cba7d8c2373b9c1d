/**
 * Finished work reaches the terminal (issue 47 §2) and the budget shows live (issue 46 §4): through a
 * real hub, `run`, `wait` and `show` print what a stopped task had produced (`partial_result`);
 * `run`'s live line shows tokens and cost against the budget; `tasks` and `show` agree on a task
 * that waits for an answer.
 */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { fixture, waitFor } from '../helpers/core.js';
import { BIN, cli, hubEnv, startHub } from '../hub/control/hub-process.js';

describe('a stopped task on the terminal', () => {
  test('run --json, wait --json and show print the partial result of a task stopped at its deadline (exit 124)', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const run = await cli(['run', '--json', '--timeout', '1500', '--', process.execPath, fixture('keeps-work.mjs')], hub.env);
    expect(run.code).toBe(124);
    const body = JSON.parse(run.stdout) as Record<string, any>;
    expect(body).toMatchObject({
      status: 'cancelled',
      reason: 'timeout',
      partial_result: {
        data: { step: 'drafted', text: 'half a report', progress: 40 },
        progress: 40,
        answer: { status: 'cancelled' },
        attachments: [{ name: 'draft.md', encoding: 'utf8' }],
      },
    });
    const id = body.task_id as string;
    const waited = await cli(['wait', '--json', id], hub.env);
    expect(waited.code).toBe(124);
    expect(JSON.parse(waited.stdout).partial_result).toEqual(body.partial_result);
    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/^state +failed \(timeout\)$/m);
    expect(shown.stdout).toContain('partial result\n{\n  "data": {\n    "step": "drafted"');
    const human = await cli(['run', '--timeout', '1500', '--', process.execPath, fixture('keeps-work.mjs')], hub.env);
    expect(human.code).toBe(124);
    expect(human.stderr).toContain('[timeout]; what the agent had produced is kept (partial result below)');
    expect(JSON.parse(human.stdout).partial_result.data.text).toBe('half a report');
  });

  test('a final report over --max-tokens ends budget_exceeded (exit 1) with the result kept', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const input = JSON.stringify({ usage: { input: 150, output: 70 } });
    const run = await cli(
      ['run', '--json', '--max-tokens', '150', '--input', input, '--', process.execPath, fixture('reports-at-end.mjs')],
      hub.env,
    );
    expect(run.code).toBe(1);
    const body = JSON.parse(run.stdout);
    expect(body).toMatchObject({ status: 'success', reason: 'budget_exceeded', payload: { data: { answer: 'done' } } });
    expect(body.message).toContain('used 220 tokens, over the budget of 150');
  });

  test('tasks and show agree on a task waiting for an answer: needs answer', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const submitted = await cli(['run', '--detach', '--', process.execPath, fixture('asker.mjs')], hub.env);
    const id = submitted.stdout.trim();
    const listed = await waitFor(
      async () => {
        const tasks = (await cli(['tasks'], hub.env)).stdout;
        return tasks.includes('needs answer') ? tasks : undefined;
      },
      'the question',
      20_000,
      100,
    );
    expect(listed).toContain(id);
    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/^state +needs answer$/m);
    await cli(['answer', id, 'main'], hub.env);
  });
});

describe.skipIf(spawnSync('script', ['--version']).error)('the live line on a terminal', () => {
  test('run shows the tokens and cost spent against the budget as reports arrive', async () => {
    const command = [
      process.execPath,
      BIN,
      'run',
      '--local',
      '--label',
      'sp',
      '--max-tokens',
      '5000',
      '--max-cost-usd',
      '2',
      '--',
      process.execPath,
      fixture('sdk-spender.mjs'),
    ];
    const line = command.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
    const shown = await new Promise<string>((resolve) => {
      const child = spawn('script', ['-qefc', line, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => (text += chunk));
      child.on('close', () => resolve(text));
    });
    // Each step reports 50 tokens more; the line is redrawn ten times a second.
    expect(shown).toMatch(/ · \d+\/5000 tokens · \$0\/\$2/);
    expect(shown).toMatch(/[1-9]\d*0\/5000 tokens/);
  });
});
