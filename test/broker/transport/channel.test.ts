/**
 * drained() on a real Unix socket with a real agent process: what an agent wrote before it exited is
 * read before the channel is judged quiet, even when the broker's loop blocks right after accepting
 * the connection (as a spawn() does on a loaded machine).
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Server } from 'node:net';
import { describe, expect, test } from 'vitest';
import { TaskChannel, DEFAULT_CHANNEL_LIMITS, type ChannelHandlers } from '../../../src/broker/transport/channel.js';
import { ensurePrivateDir, newEndpointAddress } from '../../../src/broker/transport/endpoint.js';
import type { Payload } from '../../../src/protocol/index.js';
import { tempDir } from '../../helpers/core.js';

const TOKEN = 'a'.repeat(64);
const TASK = 'task-drained';

/** Connects, writes a hello and `count` partials in one write, closes without reading, exits. */
const AGENT = `
  const [endpoint, task, token, count] = process.argv.slice(1);
  const lines = [JSON.stringify({ type: 'hello', task_id: task, token })];
  for (let i = 0; i < Number(count); i++) lines.push(JSON.stringify({ task_id: task, status: 'partial', data: { i } }));
  const socket = require('node:net').createConnection(endpoint, () => socket.write(lines.join('\\n') + '\\n', () => socket.destroy()));`;

function handlers(payloads: Payload[]): ChannelHandlers {
  return {
    payload: (payload) => payloads.push(payload),
    ask: () => {},
    toolCall: () => {},
    activity: () => {},
    greeting: () => [],
    problem: () => {},
    refused: () => {},
    overflow: () => {},
  };
}

/** Holds the event loop for `ms`, as a synchronous spawn() does on a saturated machine. */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe.skipIf(process.platform === 'win32')('drained()', () => {
  test('reads a connection accepted in the last turn before judging it quiet, though the loop then blocked past the quiet period', async () => {
    const dir = path.join(tempDir(), 'ipc');
    ensurePrivateDir(dir);
    const payloads: Payload[] = [];
    const channel = new TaskChannel(newEndpointAddress(dir), TASK, TOKEN, handlers(payloads), DEFAULT_CHANNEL_LIMITS, {
      requireToken: true,
    });
    await channel.listen();
    try {
      // Right after accepting the agent's connection the loop blocks, longer than the quiet period.
      (channel as unknown as { server: Server }).server.on('connection', () => block(500));
      // Resume in the poll phase (an fs callback), as the agent's exit is seen there: this turn's
      // check phase comes before the poll that accepts the connection.
      await readFile(__filename);
      // The agent connects, writes and exits while this loop is held (the connection waits in the backlog).
      const agent = spawnSync(process.execPath, ['-e', AGENT, channel.endpoint, TASK, TOKEN, '50'], { timeout: 60_000 });
      expect(agent.status, String(agent.stderr)).toBe(0);
      await channel.drained(300);
      expect(payloads.map((p) => (p.data as { i: number }).i)).toEqual([...Array(50).keys()]);
    } finally {
      await channel.close();
    }
  });
});
