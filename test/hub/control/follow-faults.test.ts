/**
 * The follow stream (`POST /api/follow`) when one side misbehaves: a front-end that stops reading is
 * cut off (the hub's memory stays bounded) and its task cancelled; a hub that sends a malformed line
 * or closes the stream early fails the follower with a HubLostError that says so — never a hang.
 */
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { EVENTS_PATH, FOLLOW_PATH } from '../../../src/bridge/http-routes.js';
import { connectHub, HubLostError } from '../../../src/client/hub-client.js';
import { fixture, tempDir, waitFor } from '../../helpers/core.js';
import { startTestHeadless, type TestHeadless } from '../../helpers/panel.js';

let headless: TestHeadless | undefined;
const servers: http.Server[] = [];
afterEach(async () => {
  await headless?.stop();
  headless = undefined;
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A stand-in hub whose follow stream sends `lines` and then ends (or `hang`s open). */
async function fakeHub(lines: string[], { hang = false } = {}): Promise<string> {
  const socketPath = path.join(tempDir(), 'control.sock');
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson; charset=utf-8' });
    for (const line of lines) res.write(line + '\n');
    if (!hang) res.end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return socketPath;
}

const picture = (id: string) => JSON.stringify({ task: { id, state: 'running' } });

describe('the follow stream', () => {
  test('a front-end that stops reading is cut off once 8 MB wait for it, and its task is cancelled with the reason', async () => {
    const dir = tempDir();
    headless = await startTestHeadless({ dir, control: path.join(dir, 'run', 'control.sock') });
    // 30,000 partials, each sent with the task's picture: ~30 MB of feed the front-end never reads.
    const body = JSON.stringify({ command: fixture('chatty-env.mjs'), input: { n: 30_000, hold: true }, label: 'never read' });
    const req = http.request({
      socketPath: path.join(dir, 'run', 'control.sock'),
      method: 'POST',
      path: FOLLOW_PATH,
      headers: { 'content-type': 'application/json' },
    });
    let response: http.IncomingMessage | undefined;
    let received = '';
    let closed = false;
    req.on('response', (res) => {
      response = res;
      res.setEncoding('utf8');
      res.once('data', (chunk: string) => {
        received += chunk;
        res.pause(); // for now: the hub's writes pile up
      });
      res.on('error', () => {});
      res.on('close', () => (closed = true));
    });
    req.on('error', () => (closed = true));
    req.end(body);
    await waitFor(() => headless!.broker.tasks().some((t) => t.label === 'never read'), 'the task to be submitted');
    const id = headless.broker.tasks().find((t) => t.label === 'never read')!.id;
    await waitFor(() => headless!.broker.get(id)!.state === 'cancelled', 'the hub to cut the front-end off and cancel its task', 60_000);
    expect(headless.broker.get(id)!.message).toContain('the front-end that started it went away');
    // Reading again, the front-end gets what was on its way and then the end: a broken stream, no `exited`.
    response!.on('data', (chunk: string) => (received += chunk));
    response!.resume();
    await waitFor(() => closed, 'the front-end to see its stream end');
    const lines = received.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(1);
    expect(received).not.toContain('"kind":"exited"');
    // Cut off at 8 MB of backlog, plus what the socket buffers held: far less than the 30 MB fed.
    expect(Buffer.byteLength(received)).toBeLessThan(20 * 1024 * 1024);
    req.destroy();
  }, 90_000);

  test('a malformed line on the stream fails the follower with a HubLostError that says so', async () => {
    const hub = connectHub(await fakeHub([picture('t-1'), 'this is not JSON'], { hang: true }));
    const lost: Error[] = [];
    hub.onLost((error) => lost.push(error));
    try {
      const seen: string[] = [];
      const followed = hub.submitAndFollow({ command: 'x' }, (event) => seen.push(event.task.id));
      expect(await followed.id).toBe('t-1');
      await expect(followed.ended).rejects.toThrow(HubLostError);
      await expect(followed.ended).rejects.toThrow(/malformed line on a task stream/);
      expect(seen).toEqual(['t-1']);
      expect(lost).toHaveLength(1);
    } finally {
      hub.close();
    }
  });

  test('a stream that closes before the task exited fails the follower, not a hang', async () => {
    const hub = connectHub(await fakeHub([picture('t-2')]));
    try {
      const followed = hub.submitAndFollow({ command: 'x' }, () => {});
      expect(await followed.id).toBe('t-2');
      await expect(followed.ended).rejects.toThrow(/the task's stream closed before it ended/);
    } finally {
      hub.close();
    }
  });

  test('a stream that closes before its first line rejects the id too', async () => {
    const hub = connectHub(await fakeHub([]));
    try {
      const followed = hub.submitAndFollow({ command: 'x' }, () => {});
      await expect(followed.id).rejects.toThrow(HubLostError);
      await expect(followed.ended).rejects.toThrow(HubLostError);
    } finally {
      hub.close();
    }
  });

  test('a 10 MB line in small writes that cut characters in two arrives whole, and so do split server-sent events', async () => {
    const text = '🙂é'.repeat(1024 * 1024) + 'x'.repeat(4 * 1024 * 1024) + 'THE-END';
    const ended = JSON.stringify({
      task: { id: 't-3', state: 'succeeded', result: { status: 'success', data: text } },
      update: { kind: 'ended' },
    });
    const exited = JSON.stringify({ task: { id: 't-3', state: 'succeeded' }, update: { kind: 'exited' } });
    const feed = Buffer.from(`${picture('t-3')}\n${ended}\n${exited}\n`);
    const events = Buffer.from(`: hello\n\ndata: {"type":"a","n":"${'é'.repeat(100_000)}"}\n\ndata: {"type":"b"}\r\n\r\n`);
    const socketPath = path.join(tempDir(), 'control.sock');
    const server = http.createServer(async (req, res) => {
      req.resume();
      const body = req.url === EVENTS_PATH ? events : feed;
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      // 4,099-byte writes: odd, so that many of them end inside a multibyte character.
      for (let at = 0; at < body.length; at += 4099) {
        if (!res.write(body.subarray(at, at + 4099))) await new Promise((resolve) => res.once('drain', resolve));
      }
      if (req.url !== EVENTS_PATH) res.end();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const hub = connectHub(socketPath);
    try {
      const seen: Array<{ kind?: string; data?: unknown }> = [];
      const followed = hub.submitAndFollow({ command: 'x' }, (event) =>
        seen.push({ kind: event.update?.kind, data: event.task.result?.data }),
      );
      await followed.ended;
      expect(seen.map((event) => event.kind)).toEqual([undefined, 'ended', 'exited']);
      expect(seen[1]!.data === text).toBe(true);
      const received: Array<{ type: string; n?: string }> = [];
      const unsubscribe = hub.subscribe((event) => received.push(event as unknown as { type: string; n?: string }));
      await waitFor(() => received.length === 2, 'both events');
      unsubscribe();
      expect(received.map((event) => event.type)).toEqual(['a', 'b']);
      expect(received[0]!.n).toBe('é'.repeat(100_000));
    } finally {
      hub.close();
    }
  }, 60_000);
});
