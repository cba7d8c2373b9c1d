/**
 * The update coalescer, driven by a fake broker: first event is the full picture, later ones carry
 * changes, removals and the paused flag; a throwing listener does not stop the others.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, test } from 'vitest';
import type { BridgeEvent } from '../../src/bridge/contract.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { UpdateCoalescer } from '../../src/hosts/update-coalescer.js';
import { waitFor } from '../helpers/core.js';

function snapshot(id: string, state: TaskSnapshot['state'] = 'running'): TaskSnapshot {
  return { id, label: id, state, command: 'x', args: [], cwd: '/', createdAt: new Date().toISOString() } as TaskSnapshot;
}

class FakeSource extends EventEmitter {
  readonly byId = new Map<string, TaskSnapshot>();
  paused = false;
  tasks(): TaskSnapshot[] {
    return [...this.byId.values()];
  }
  get(id: string): TaskSnapshot | undefined {
    return this.byId.get(id);
  }
}

function collect(coalescer: UpdateCoalescer): BridgeEvent[] {
  const events: BridgeEvent[] = [];
  coalescer.subscribe((event) => events.push(event));
  return events;
}

describe('UpdateCoalescer', () => {
  test('a new subscriber first gets the full picture with the paused flag', async () => {
    const source = new FakeSource();
    source.byId.set('a', snapshot('a'));
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 10 });
    const events = collect(coalescer);
    await waitFor(() => events.length === 1, 'the full picture');
    expect(events[0]).toEqual({ tasks: [source.byId.get('a')], full: true, paused: false });
    coalescer.close();
  });

  test('many changes to one task within an interval reach the subscriber as one entry', async () => {
    const source = new FakeSource();
    source.byId.set('a', snapshot('a'));
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 50 });
    const events = collect(coalescer);
    await waitFor(() => events.length === 1, 'the full picture');
    for (let i = 0; i < 20; i++) coalescer.taskChanged('a');
    await waitFor(() => events.length === 2, 'the delta');
    expect(events[1]!.tasks.map((t) => t.id)).toEqual(['a']);
    expect(events[1]!.full).toBeUndefined();
    coalescer.close();
  });

  test('removed tasks are announced by id and not sent as changed', async () => {
    const source = new FakeSource();
    source.byId.set('a', snapshot('a', 'succeeded'));
    source.byId.set('b', snapshot('b'));
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 10 });
    const events = collect(coalescer);
    await waitFor(() => events.length === 1, 'the full picture');
    coalescer.taskChanged('a');
    coalescer.taskChanged('b');
    source.byId.delete('a');
    coalescer.tasksRemoved(['a']);
    await waitFor(() => events.length === 2, 'the delta');
    expect(events[1]).toMatchObject({ removed: ['a'] });
    expect(events[1]!.tasks.map((t) => t.id)).toEqual(['b']);
  });

  test('a paused change is sent once; a throwing listener does not stop the others', async () => {
    const source = new FakeSource();
    const errors: unknown[] = [];
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 10, onListenerError: (error) => errors.push(error) });
    coalescer.subscribe(() => {
      throw new Error('listener failed');
    });
    const events = collect(coalescer);
    await waitFor(() => events.length === 1, 'the full picture');
    source.paused = true;
    coalescer.poke();
    await waitFor(() => events.length === 2, 'the paused event');
    expect(events[1]).toEqual({ tasks: [], paused: true });
    expect(errors.length).toBeGreaterThanOrEqual(2);
    coalescer.close();
  });

  test('nothing is sent after close', () => {
    const source = new FakeSource();
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 10 });
    coalescer.close();
    const listener = (): void => {
      throw new Error('must not be called');
    };
    coalescer.subscribe(listener)();
    coalescer.taskChanged('a');
    expect(coalescer.hasSubscribers).toBe(false);
  });
});
