/**
 * Webhooks signed per Standard Webhooks, verified by another implementation (svix's `Webhook`), over
 * real loopback HTTP, with a real broker's events.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as SvixWebhook } from 'svix';
import { afterEach, describe, expect, test } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { Notifications, parseWebhooks } from '../../src/notify/index.js';
import { WebhookNotifier, type ScheduleSkippedBody, type WebhookBody } from '../../src/notify/webhooks.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunPolicy } from '../../src/broker/run-policy.js';
import { HubScheduler } from '../../src/hub/scheduler.js';
import { ScheduleStore } from '../../src/schedules/index.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { fixture, makeBroker, settle, waitFor } from '../helpers/core.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';

interface Received {
  headers: Record<string, string>;
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A receiver that records each request and answers 204, `answerAfterMs` after recording it. */
function listen(port = 0, answerAfterMs = 0): Promise<{ port: number; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body });
      setTimeout(() => res.writeHead(204).end(), answerAfterMs);
    });
  });
  servers.push(server);
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, received })),
  );
}

/** A port nothing listens on now (taken, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The body, once svix's verification (which throws on a bad signature) passed. */
function verified(secret: string, message: Received): WebhookBody {
  new SvixWebhook(secret).verify(message.body, message.headers);
  return JSON.parse(message.body) as WebhookBody;
}

const task = (fields: Partial<TaskSnapshot> = {}): TaskSnapshot => ({
  id: 't1',
  label: 'job',
  state: 'failed',
  reason: 'budget_exceeded',
  message: 'over budget: used 150 tokens, over the budget of 120',
  command: 'x',
  args: [],
  cwd: '/',
  attempt: 1,
  maxAttempts: 1,
  createdAt: '2026-12-05T00:00:00.000Z',
  counters: { malformed: 0, rejected: 0, ignored: 0 },
  ...fields,
});

describe('webhooks', () => {
  test('a broker’s ended and needs_input events arrive signed; svix verifies them and a wrong secret fails', async () => {
    const { port, received } = await listen();
    const { broker } = makeBroker();
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/hook`, events: ['ended', 'needs_input'], secret: SECRET }],
      logger: silentLogger,
    });
    // The hub's one decision feeds the channel (src/hub/assemble.ts does the same).
    const notifications = new Notifications(broker, silentLogger, [notifier]);
    const asker = broker.submit({ command: fixture('asker.mjs') });
    await waitFor(() => received.length >= 1, 'the needs_input webhook');
    asker.cancel('enough');
    await settle(asker.result);
    await waitFor(() => received.length >= 2, 'the ended webhook');
    const [ask, ended] = received.map((message) => verified(SECRET, message));
    expect(ask).toMatchObject({ type: 'needs_input', data: { task: { id: asker.id, pendingQuestion: expect.any(Object) } } });
    expect(ended).toMatchObject({ type: 'ended', data: { task: { id: asker.id, state: 'cancelled' } } });
    expect(received[0]!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(() => verified(OTHER_SECRET, received[0]!)).toThrow();
    notifications.close();
    await asker.finished;
  });

  test('a receiver down for 3 s still gets the event, once, with the same id', async () => {
    const port = await freePort();
    const logged: string[] = [];
    const logger = {
      ...silentLogger,
      info: (text: unknown) => logged.push(String(text)),
      warn: (text: unknown) => logged.push(String(text)),
    };
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/`, events: ['budget_exceeded'], secret: SECRET }],
      logger,
    });
    notifier.announce({ type: 'budget_exceeded', task: task() });
    await waitFor(() => logged.some((line) => line.includes('retrying')), 'a failed first attempt');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    // It answers late, as a busy machine does: the delivery is logged only once the answer is back.
    const { received } = await listen(port, 300);
    await waitFor(() => received.length >= 1, 'the retried delivery', 30_000);
    expect(verified(SECRET, received[0]!)).toMatchObject({ type: 'budget_exceeded', data: { task: { reason: 'budget_exceeded' } } });
    await waitFor(() => logged.some((line) => line.includes('delivered')), 'the delivery to be logged');
    const id = received[0]!.headers['webhook-id']!;
    expect(logged.filter((line) => line.includes('retrying')).every((line) => line.includes(id))).toBe(true);
    expect(received).toHaveLength(1);
    // Each delivery is logged, the secret never.
    expect(logged.join('\n')).not.toContain(SECRET.slice(6));
    notifier.close();
  });

  test('the notify section is checked, and a bad secret is refused without being quoted', () => {
    expect(parseWebhooks({ webhooks: [{ url: 'http://127.0.0.1:1/', events: ['ended'], secret: SECRET }] }, '/c.yaml')).toHaveLength(1);
    expect(() => parseWebhooks({ webhooks: [{ url: 'ftp://x', events: ['ended'], secret: SECRET }] }, '/c.yaml')).toThrow(
      'notify.webhooks[0].url must be an http(s) URL',
    );
    const bad = () => parseWebhooks({ webhooks: [{ url: 'http://x/', events: ['ended'], secret: 'hunter2' }] }, '/c.yaml');
    expect(bad).toThrow('notify.webhooks[0].secret must be a secret whsec_<base64>');
    expect(bad).not.toThrow('hunter2');
  });
});

/** A logger that keeps every line. */
function keptLogger(): { logger: typeof silentLogger; logged: string[] } {
  const logged: string[] = [];
  const keep = (text: unknown) => logged.push(String(text));
  return { logger: { ...silentLogger, info: keep, warn: keep, error: keep }, logged };
}

/** A receiver with its own handler; tracks connections open at once and in all. */
async function receiver(handle: (req: IncomingMessage, res: import('node:http').ServerResponse) => void) {
  const stats = { open: 0, maxOpen: 0, requests: 0 };
  const server = createServer((req, res) => {
    stats.requests += 1;
    handle(req, res);
  });
  server.on('connection', (socket) => {
    stats.open += 1;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    socket.on('close', () => (stats.open -= 1));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, stats, server };
}

describe('a receiver cannot harm the hub (issue 47)', () => {
  test('Y54: an endless answer is read to a small bound, then the connection is dropped; the delivery counts', async () => {
    let written = 0;
    let closed = false;
    const { port, server } = await receiver((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const more = () => {
        while (!closed && res.write(chunk)) written += chunk.length;
        if (!closed) written += chunk.length;
      };
      res.on('drain', more);
      res.on('close', () => (closed = true));
      more();
    });
    const { logger, logged } = keptLogger();
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/`, events: ['ended'], secret: SECRET }],
      logger,
    });
    notifier.announce({ type: 'ended', task: task() });
    await waitFor(() => closed, 'the receiver’s connection to be dropped', 20_000);
    await waitFor(() => logged.some((line) => line.includes('delivered (HTTP 200')), 'the delivery to be logged');
    // What the sockets' buffers held, not the answer: the hub read a few KiB of it.
    expect(written).toBeLessThan(64 * 1024 * 1024);
    notifier.close();
    server.closeAllConnections();
  });

  test('Y34: a 307 is not followed: the signed event goes nowhere else, and the log says it failed', async () => {
    const elsewhere = await receiver((req, res) => res.writeHead(204).end());
    const { port } = await receiver((req, res) => {
      req.resume();
      res.writeHead(307, { location: `http://127.0.0.1:${elsewhere.port}/stolen` }).end();
    });
    const { logger, logged } = keptLogger();
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/`, events: ['ended'], secret: SECRET }],
      logger,
      retryDelaysMs: [10],
    });
    notifier.announce({ type: 'ended', task: task() });
    await waitFor(() => logged.some((line) => line.includes('giving up')), 'the delivery to give up');
    expect(elsewhere.stats.requests).toBe(0);
    expect(logged.filter((line) => line.includes('HTTP 307, a redirect (not followed)'))).toHaveLength(2);
    expect(logged.join('\n')).not.toContain('delivered');
    notifier.close();
  });

  test('Y36: a receiver that never answers gets at most 4 connections at once, then one, ever less often', async () => {
    const { port, stats, server } = await receiver((req) => req.resume());
    const { logger, logged } = keptLogger();
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/`, events: ['ended'], secret: SECRET }],
      logger,
      retryDelaysMs: [100, 200, 400, 800, 1600],
      requestTimeoutMs: 300,
    });
    for (let i = 0; i < 40; i++) notifier.announce({ type: 'ended', task: task({ id: `t${i}` }) });
    await waitFor(() => logged.filter((line) => line.includes('TimeoutError')).length >= 8, 'eight timed-out attempts', 30_000);
    // 40 events at once, each retried: 4 in flight at first, then one at a time with growing pauses.
    expect(stats.maxOpen).toBeLessThanOrEqual(4);
    expect(stats.requests).toBeLessThanOrEqual(12);
    notifier.close();
    server.closeAllConnections();
  });

  test('Y32: the log names the host only, never the path or query (which may hold a key)', async () => {
    const { port, received } = await listen();
    const { logger, logged } = keptLogger();
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/hook/s3cretpath?key=k3yvalue`, events: ['ended'], secret: SECRET }],
      logger,
    });
    notifier.announce({ type: 'ended', task: task() });
    await waitFor(() => logged.some((line) => line.includes('delivered')), 'the delivery to be logged');
    expect(received).toHaveLength(1);
    const log = logged.join('\n');
    expect(log).toContain(`to 127.0.0.1:${port}: delivered`);
    expect(log).not.toContain('s3cretpath');
    expect(log).not.toContain('k3yvalue');
    notifier.close();
  });

  test('Y33: a URL with user:pass@ is refused at load, the password never quoted', () => {
    const bad = () =>
      parseWebhooks({ webhooks: [{ url: 'https://alice:hunter2@example.com/h', events: ['ended'], secret: SECRET }] }, '/c.yaml');
    expect(bad).toThrow('/c.yaml: notify.webhooks[0].url must not hold a user name or password (user:pass@)');
    expect(bad).not.toThrow('hunter2');
  });
});

describe('schedule_skipped', () => {
  test('a fire the hub’s scheduler skips for overlap arrives signed as schedule_skipped; svix verifies it', async () => {
    const { port, received } = await listen();
    const { broker } = makeBroker();
    const notifier = new WebhookNotifier({
      targets: [{ url: `http://127.0.0.1:${port}/hook`, events: ['schedule_skipped'], secret: SECRET }],
      logger: silentLogger,
    });
    const notifications = new Notifications(broker, silentLogger, [notifier]);
    const dataDir = mkdtempSync(join(tmpdir(), 'bc-hook-sched-'));
    const clock = { now: Date.parse('2026-12-05T09:00:00Z') };
    const start = clock.now;
    const store = new ScheduleStore(dataDir);
    const scheduler = new HubScheduler({
      store,
      submit: (spec) => broker.submit(spec),
      runPolicy: new RunPolicy([{ name: 'sleeper', command: fixture('sleeper.mjs') }]),
      logger: silentLogger,
      now: () => clock.now,
      tickMs: 0,
      onSkipped: (record) => notifications.scheduleSkipped({ ...record, reason: record.reason! }),
    });
    try {
      scheduler.add({ name: 'slow', everyMs: 60_000, command: [fixture('sleeper.mjs')] });
      scheduler.start();
      clock.now = start + 60_000;
      scheduler.tick();
      clock.now = start + 120_000;
      scheduler.tick();
      await waitFor(() => received.length >= 1, 'the schedule_skipped webhook');
      const body = verified(SECRET, received[0]!) as unknown as ScheduleSkippedBody;
      expect(body).toMatchObject({
        type: 'schedule_skipped',
        data: { schedule: { schedule: 'slow', at: start + 120_000, reason: 'overlap' } },
      });
      expect(() => verified(OTHER_SECRET, received[0]!)).toThrow();
      const [run] = store.history('slow');
      broker.cancel(run!.taskId!);
      await waitFor(() => scheduler.activeRuns('slow') === 0, 'the run to end');
    } finally {
      scheduler.stop();
      notifications.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
