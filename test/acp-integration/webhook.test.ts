/**
 * A `needs_input` webhook of an approval carries what it is for: the pending question's `approval`
 * (the tool call's kind, title, paths and the agent's options), signed as every webhook, over real
 * loopback HTTP with a real broker's events (docs/acp.md, docs/notifications.md).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { Notifications } from '../../src/notify/index.js';
import { WebhookNotifier, type WebhookBody } from '../../src/notify/webhooks.js';
import { makeBroker, settle, waitFor } from '../helpers/core.js';

const APPROVER = path.resolve('test/acp-integration/fixtures/approver.mjs');
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

test('the needs_input webhook of an approval carries the tool call and the options', async () => {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const { broker } = makeBroker();
  const notifier = new WebhookNotifier({
    targets: [{ url: `http://127.0.0.1:${port}/hook`, events: ['needs_input'], secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
    logger: silentLogger,
  });
  const notifications = new Notifications(broker, silentLogger, [notifier]);
  const task = broker.submit({ command: APPROVER });
  await waitFor(() => bodies.length >= 1, 'the needs_input webhook');
  const body = JSON.parse(bodies[0]!) as WebhookBody;
  expect(body).toMatchObject({
    type: 'needs_input',
    data: {
      task: {
        id: task.id,
        pendingQuestion: {
          question: 'needs approval: Write notes.md /work/notes.md',
          approval: { tool_call_id: 'call-1', kind: 'edit', locations: ['/work/notes.md'] },
        },
      },
    },
  });
  expect(body.data.task.pendingQuestion?.approval?.options.map((o) => o.name)).toEqual(['Allow once', 'Always allow', 'Reject']);
  task.cancel('enough');
  await settle(task.result);
  notifications.close();
  await task.finished;
});
