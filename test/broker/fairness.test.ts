import { describe, expect, test } from 'vitest';
import { fixture, makeBroker } from '../helpers/core.js';

describe('one chatty agent and the event loop', () => {
  test('a connection lets the event loop go after 256 KiB, however fast its agent writes', async () => {
    const { broker } = makeBroker();
    const lines = 30_000;
    const task = broker.submit({ command: fixture('flood.mjs'), input: { lines } });
    // Partials handled between two turns of the event loop (a setImmediate chain while the agent floods).
    let inTurn = 0;
    let mostInOneTurn = 0;
    let flooding = true;
    const turn = () => {
      mostInOneTurn = Math.max(mostInOneTurn, inTurn);
      inTurn = 0;
      if (flooding) setImmediate(turn);
    };
    task.on('update', (u) => {
      if (u.kind !== 'partial') return;
      if (inTurn++ === 0 && mostInOneTurn === 0) setImmediate(turn);
    });
    expect((await task.result).data).toEqual({ sent: lines });
    flooding = false;
    // ~210-byte lines: 256 KiB plus the chunk read after the pause is under 1,700 lines; without the yield
    // libuv hands over up to 32 reads of 64 KiB (≈ 10,000 lines) in one turn.
    expect(mostInOneTurn).toBeGreaterThan(0);
    expect(mostInOneTurn).toBeLessThan(2_000);
  });
});
