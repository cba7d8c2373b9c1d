/**
 * A reply (an answer, a tool result, an ack) is written at once, not at the end of the event loop's
 * turn (channel.ts `replyNow`), behind what waits in the outbox; and a reply to a peer that wrote
 * everything and closed without reading still loses none of its lines. Real Unix sockets; the peer
 * is a client in this process or a child process.
 */
import { spawn } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { TaskChannel, DEFAULT_CHANNEL_LIMITS, type ChannelHandlers } from '../../../src/broker/transport/channel.js';
import { ensurePrivateDir, newEndpointAddress } from '../../../src/broker/transport/endpoint.js';
import type { AskMessage, BrokerMessage, Payload } from '../../../src/protocol/index.js';
import { tempDir } from '../../helpers/core.js';

const TASK = 'task-reply';
const TOKEN = 'b'.repeat(64);

interface Seen {
  payloads: Payload[];
  /** Bytes the connection's socket had taken right after each reply, before the turn ended. */
  writtenAtReply: number[];
}

function channelFor(seen: Seen, greeting: BrokerMessage[] = []): TaskChannel {
  const dir = path.join(tempDir(), 'ipc');
  ensurePrivateDir(dir);
  const holder: { channel?: TaskChannel } = {};
  const written = (): number => {
    const channel = holder.channel!;
    const connections = (channel as unknown as { connections: Set<{ socket: Socket }> }).connections;
    return [...connections].reduce((sum, c) => sum + c.socket.bytesWritten, 0);
  };
  const handlers: ChannelHandlers = {
    payload: (payload) => seen.payloads.push(payload),
    ask: (message: AskMessage, reply) => {
      reply({ type: 'answer', task_id: TASK, ask_id: message.ask_id, answer: `to ${message.ask_id}` });
      seen.writtenAtReply.push(written());
    },
    toolCall: () => {},
    activity: () => {},
    greeting: () => greeting,
    problem: () => {},
    refused: () => {},
    overflow: () => {},
  };
  const channel = new TaskChannel(newEndpointAddress(dir), TASK, TOKEN, handlers, DEFAULT_CHANNEL_LIMITS, { requireToken: true });
  holder.channel = channel;
  return channel;
}

/** Connects, sends `lines`, and collects what comes back until `until` says enough. */
async function converse(endpoint: string, lines: object[], until: (got: BrokerMessage[]) => boolean): Promise<BrokerMessage[]> {
  const socket = createConnection(endpoint);
  const got: BrokerMessage[] = [];
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const part of parts) got.push(JSON.parse(part) as BrokerMessage);
      if (until(got)) resolve();
    });
    socket.write(lines.map((line) => JSON.stringify(line) + '\n').join(''));
  });
  socket.destroy();
  return got;
}

describe.skipIf(process.platform === 'win32')('replies', () => {
  test('a reply waits behind a greeting queued in the same turn', async () => {
    const seen: Seen = { payloads: [], writtenAtReply: [] };
    const welcome: BrokerMessage = { type: 'welcome', task_id: TASK, attempt: 1, protocol: 1, heartbeat_timeout_ms: 0 };
    const channel = channelFor(seen, [welcome]);
    await channel.listen();
    try {
      const hello = { type: 'hello', task_id: TASK, token: TOKEN };
      const ask = (id: string) => ({ type: 'ask', task_id: TASK, ask_id: id, question: 'q?' });
      // The answer waits behind the greeting queued in the same turn, and goes out with it.
      const first = await converse(channel.endpoint, [hello, ask('a1')], (got) => got.length >= 2);
      expect(first.map((m) => m.type)).toEqual(['welcome', 'answer']);
      expect(seen.writtenAtReply).toEqual([0]);
    } finally {
      await channel.close();
    }
  });

  test('with nothing queued, an answer is on the socket before the ask handler returns', async () => {
    const seen: Seen = { payloads: [], writtenAtReply: [] };
    const channel = channelFor(seen);
    await channel.listen();
    try {
      const hello = { type: 'hello', task_id: TASK, token: TOKEN };
      const got = await converse(
        channel.endpoint,
        [hello, { type: 'ask', task_id: TASK, ask_id: 'x1', question: 'q?' }],
        (g) => g.length >= 1,
      );
      expect(got).toEqual([{ type: 'answer', task_id: TASK, ask_id: 'x1', answer: 'to x1' }]);
      // Written while the ask's line was handled, not at the end of the event loop's turn.
      expect(seen.writtenAtReply).toHaveLength(1);
      expect(seen.writtenAtReply[0]).toBeGreaterThan(0);
    } finally {
      await channel.close();
    }
  });

  test('a peer that writes an ask and 3,000 partials and closes without reading loses none of them', async () => {
    const agent = `
      const [endpoint, task, token] = process.argv.slice(1);
      const lines = [JSON.stringify({ type: 'hello', task_id: task, token }), JSON.stringify({ type: 'ask', task_id: task, ask_id: 'a', question: 'q' })];
      for (let i = 0; i < 3000; i++) lines.push(JSON.stringify({ task_id: task, status: 'partial', data: { i, pad: 'x'.repeat(100) } }));
      lines.push(JSON.stringify({ task_id: task, status: 'success', data: 'done' }));
      const socket = require('node:net').createConnection(endpoint, () => socket.write(lines.join('\\n') + '\\n', () => socket.destroy()));`;
    for (let run = 0; run < 3; run++) {
      const seen: Seen = { payloads: [], writtenAtReply: [] };
      const channel = channelFor(seen);
      await channel.listen();
      try {
        const child = spawn(process.execPath, ['-e', agent, channel.endpoint, TASK, TOKEN], { stdio: 'ignore' });
        await new Promise((resolve) => child.once('exit', resolve));
        await channel.drained(300);
        expect(seen.payloads).toHaveLength(3001);
        expect(seen.payloads.at(-1)).toMatchObject({ status: 'success' });
        expect(seen.payloads.slice(0, 3000).map((p) => (p.data as { i: number }).i)).toEqual([...Array(3000).keys()]);
      } finally {
        await channel.close();
      }
    }
  });
});
