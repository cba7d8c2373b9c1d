/**
 * The task-kind seam (src/broker/task-kinds.ts) with a kind of the test's own, hooked in as a future
 * kind would be (`BrokerOptions.kinds`): plan at submit, prepare before the first attempt, capture
 * before the exit is reported — each once, in that order; a refusal registers nothing; a failed
 * prepare fails the task before any attempt; a task cancelled while queued is neither prepared nor
 * captured.
 */
import { describe, expect, test } from 'vitest';
import { BrokerError, type KindContext, type TaskKind, type TaskRun, type TaskSpec } from '../../src/broker/index.js';
import { fixture, makeBroker } from '../helpers/core.js';

/** A kind for specs tagged `kind: stamp`: it records its steps, and the task's updates beside them. */
function stampKind(steps: string[], options: { failPrepare?: boolean } = {}) {
  let context: KindContext | undefined;
  const make = (given: KindContext): TaskKind[] => {
    context = given;
    const kind: TaskKind = {
      plan(id: string, spec: TaskSpec): TaskRun | undefined {
        if (spec.tags?.kind === 'refuse') throw new BrokerError('invalid_option', 'stamps refuse this one');
        if (spec.tags?.kind !== 'stamp') return undefined;
        steps.push(`plan ${id.length > 0 ? 'with id' : 'no id'}`);
        return {
          spec: { ...spec, input: { n: 42 } },
          prepare: async ({ task, journal }) => {
            steps.push(`prepare (held: ${context?.task(task.id) ? 'yes' : 'no'})`);
            if (options.failPrepare) throw new Error('no stamp pad');
            task.log('broker', 'stamped');
            journal({ e: 'progress', id: task.id, at: new Date().toISOString(), progress: 1 });
          },
          capture: async ({ task }) => {
            steps.push(`capture (finished: ${task.finished})`);
          },
        };
      },
    };
    return [kind];
  };
  return make;
}

describe('the task-kind seam', () => {
  test('plan rewrites the spec, prepare runs before the first attempt, capture before exited, each once', async () => {
    const steps: string[] = [];
    const { broker } = makeBroker({ kinds: stampKind(steps) });
    const task = broker.submit({ command: fixture('quick.mjs'), tags: { kind: 'stamp' } });
    task.on('update', (update) => {
      if (update.kind === 'started' || update.kind === 'ended' || update.kind === 'exited') steps.push(update.kind);
    });
    const result = await task.result;
    await task.finished;
    expect(result.data).toEqual({ n: 42 });
    expect(steps).toEqual(['plan with id', 'prepare (held: yes)', 'started', 'ended', 'capture (finished: true)', 'exited']);
    expect(broker.logOf(task.id).map((line) => line.text)).toContain('stamped');
    // A spec of no kind runs as before, untouched.
    const plain = broker.submit({ command: fixture('quick.mjs'), input: { n: 7 } });
    expect((await plain.result).data).toEqual({ n: 7 });
    expect(steps).toHaveLength(6);
    await broker.close();
  });

  test('a refusal at plan registers nothing', async () => {
    const { broker } = makeBroker({ kinds: stampKind([]) });
    expect(() => broker.submit({ command: fixture('quick.mjs'), tags: { kind: 'refuse' } })).toThrow('stamps refuse this one');
    expect(broker.tasks()).toEqual([]);
    await broker.close();
  });

  test('a failed prepare fails the task before any attempt; capture still runs once', async () => {
    const steps: string[] = [];
    const { broker } = makeBroker({ kinds: stampKind(steps, { failPrepare: true }) });
    const task = broker.submit({ command: fixture('quick.mjs'), tags: { kind: 'stamp' } });
    await expect(task.result).rejects.toMatchObject({ reason: 'error', message: expect.stringContaining('failed: no stamp pad') });
    await task.finished;
    expect(steps).toEqual(['plan with id', 'prepare (held: yes)', 'capture (finished: true)']);
    expect(broker.get(task.id)).toMatchObject({ state: 'failed', attempt: 0 });
    await broker.close();
  });

  test('a task cancelled while queued is neither prepared nor captured', async () => {
    const steps: string[] = [];
    const { broker } = makeBroker({ kinds: stampKind(steps) });
    broker.pause();
    const task = broker.submit({ command: fixture('quick.mjs'), tags: { kind: 'stamp' } });
    broker.cancel(task.id);
    await expect(task.result).rejects.toMatchObject({ reason: 'cancelled' });
    broker.resume();
    await broker.onIdle();
    expect(steps).toEqual(['plan with id']);
    await broker.close();
  });
});
