/**
 * The update coalescer, driven by a fake broker: first event is the full picture, later ones carry
 * changes, removals and the paused flag; a throwing listener does not stop the others. Its timing
 * (the interval, idle and busy spacing) runs on a fake clock, moved by the test.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, test } from 'vitest';
import type { BridgeEvent } from '../../src/bridge/contract.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { UpdateCoalescer } from '../../src/hub/update-coalescer.js';
import { waitFor } from '../helpers/core.js';
import { FakeClock } from '../helpers/fake-clock.js';

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

  test('the next event is an interval after the last one was delivered, however long its delivery took', () => {
    const source = new FakeSource();
    source.byId.set('a', snapshot('a'));
    const clock = new FakeClock();
    // busyFlushIntervalMs equal to the interval: the spacing under test is the same busy or not.
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 20, busyFlushIntervalMs: 20, clock });
    const deliveries: Array<{ start: number; end: number }> = [];
    coalescer.subscribe(() => {
      // A listener that takes 15 ms (slow, or a host that took the CPU away meanwhile).
      const start = clock.now();
      clock.spend(15);
      deliveries.push({ start, end: clock.now() });
    });
    for (let ms = 0; ms < 400; ms++) {
      coalescer.taskChanged('a');
      clock.advance(1);
    }
    coalescer.close();
    expect(deliveries.length).toBeGreaterThanOrEqual(8);
    for (let i = 1; i < deliveries.length; i++) expect(deliveries[i]!.start - deliveries[i - 1]!.end).toBeGreaterThanOrEqual(20);
  });

  test('a change within the interval after an event waits out the interval, then goes', () => {
    const source = new FakeSource();
    source.byId.set('a', snapshot('a'));
    const clock = new FakeClock();
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 50, clock });
    const events = collect(coalescer);
    clock.advance(0);
    expect(events).toHaveLength(1);
    clock.advance(10);
    coalescer.taskChanged('a');
    clock.advance(39);
    expect(events).toHaveLength(1);
    clock.advance(1);
    expect(events).toHaveLength(2);
    expect(events[1]!.tasks.map((t) => t.id)).toEqual(['a']);
    coalescer.close();
    expect(clock.pending).toBe(0);
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

  test('idle: a change goes out on the next turn of the event loop; under pressure events are spaced by the busy interval', () => {
    const source = new FakeSource();
    source.byId.set('a', snapshot('a'));
    const clock = new FakeClock();
    const coalescer = new UpdateCoalescer(source, { flushIntervalMs: 16, busyFlushIntervalMs: 200, clock });
    const at: number[] = [];
    let blockMs = 0;
    coalescer.subscribe(() => {
      at.push(clock.now());
      // The host's event loop, kept busy by the listener: the next timer runs late.
      clock.spend(blockMs);
    });
    clock.advance(0);
    expect(at).toHaveLength(1);
    expect(coalescer.busy).toBe(false);
    // Idle: the first flush after a quiet period is not delayed by the interval.
    clock.advance(20);
    const changed = clock.now();
    coalescer.taskChanged('a');
    clock.advance(0);
    expect(at).toEqual([expect.any(Number), changed]);
    // Busy: each delivery blocks the loop for 60 ms, so the flush after it is late: spacing goes to 200 ms.
    blockMs = 60;
    for (let i = 0; i < 3; i++) {
      coalescer.taskChanged('a');
      clock.advance(1);
      coalescer.taskChanged('a');
      clock.advance(300);
    }
    expect(coalescer.busy).toBe(true);
    expect(at.at(-1)! - at.at(-2)!).toBeGreaterThanOrEqual(200);
    // Still busy (each delivery takes 60 ms > 16): nothing goes out within 200 ms of the last one's end.
    coalescer.taskChanged('a');
    clock.advance(0);
    const before = at.length;
    const due = at.at(-1)! + blockMs + 200;
    coalescer.taskChanged('a');
    clock.advance(due - 1 - clock.now());
    expect(at).toHaveLength(before);
    clock.advance(1);
    expect(at).toHaveLength(before + 1);
    coalescer.close();
  });
});
