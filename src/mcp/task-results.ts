/**
 * `tasks/result` waits for its task on the task's own handle (`client.follow`), not by the SDK's
 * polling. The SDK's handler (pinned in package.json) looks the task up every `pollInterval` while
 * it is not terminal, and each poll adds an abort listener to the request's signal that is never
 * removed: a wait of about six seconds printed `MaxListenersExceededWarning … 11 abort listeners`,
 * and every waiting call cost the hub a `getTask` every 500 ms. Installed around the SDK's handler:
 * once the task's MCP status is terminal (or the request is cancelled, or the task's stream ended),
 * the SDK's handler runs and answers at once, as it would have on its next poll.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { isTerminal } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { BackchannelClient } from '../client/index.js';
import { wrapHandler } from './request-guards.js';
import type { BridgeTaskStore } from './task-store.js';

export function waitForResults(server: McpServer, store: BridgeTaskStore, client: Pick<BackchannelClient, 'follow'>): void {
  wrapHandler(server, 'tasks/result', (call) => async (request, extra) => {
    const taskId = request.params?.taskId;
    const signal = (extra as { signal?: AbortSignal }).signal;
    if (typeof taskId === 'string' && signal) await untilTerminal(store, client, taskId, signal);
    return call(request, extra);
  });
}

/** Resolves once `taskId`'s MCP status is terminal, `signal` aborts, or its stream ends; at once for a task it cannot follow. */
async function untilTerminal(
  store: BridgeTaskStore,
  client: Pick<BackchannelClient, 'follow'>,
  taskId: string,
  signal: AbortSignal,
): Promise<void> {
  // Anything odd (an unknown id, a hub gone) is the SDK handler's to report, as before.
  const run = await client.follow(taskId).catch(() => undefined);
  if (!run) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      run.stop();
      resolve();
    };
    const look = (): void => {
      if (isTerminal(store.describe(run.snapshot()).status)) done();
    };
    if (signal.aborted) return done();
    signal.addEventListener('abort', done, { once: true });
    run.on('update', look);
    void run.finished.then(done);
    look();
  });
}
