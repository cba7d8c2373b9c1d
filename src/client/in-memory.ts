/**
 * A client and a hub linked in memory, for tests (as vscode-jsonrpc and the MCP SDK ship one): the
 * client is the hub's client (./hub-tasks.ts) and the host is the hub's bridge over a real broker,
 * so a front-end meets what it meets over the control endpoint — every call checked by the one
 * route table (`dispatch`), every value and error through JSON, a task's own ordered stream, the
 * attached task cancelled when its client goes away — with no socket and no second process.
 */
import type { BridgeEvent, SubmitRequest, TaskFeedEvent } from '../bridge/contract.js';
import { bridgeClient, dispatch, unwrapReply, type BridgeArgs, type BridgeMethod, type BridgeResult } from '../bridge/calls.js';
import { checkSubmitRequest } from '../bridge/checks.js';
import { errorFromBody, toErrorBody } from '../model/errors.js';
import { isFinished } from '../model/task.js';
import { createBrokerBridge, type BrokerBridge, type BrokerBridgeOptions, type BrokerLike } from '../hub/broker-bridge.js';
import { readOwnVersion } from '../version.js';
import { createClient, type BackchannelClient } from './client.js';
import type { FollowedSubmission, HubClient } from './hub-client.js';
import { HubTasks } from './hub-tasks.js';

/** What the control endpoint's follow stream says when an attached task's front-end goes away. */
const FRONT_END_GONE = 'the front-end that started it went away';

export interface InMemoryPair {
  /** The front-end's side: a client of the hub below. */
  client: BackchannelClient;
  /** The hub's side: the broker's bridge, as the control endpoint serves it. */
  host: BrokerBridge;
  /** Closes the client (cancelling its attached tasks, as a closed connection does), then the host. */
  close(): Promise<void>;
}

/**
 * A client linked to a hub's bridge over `broker` (and the hub's `scheduler` and `presets`, when the
 * test has them), in memory. Both stay their owner's.
 */
export function createInMemoryPair(broker: BrokerLike, options: Pick<BrokerBridgeOptions, 'scheduler' | 'presets'> = {}): InMemoryPair {
  const host = createBrokerBridge(broker, { mode: 'headless', version: readOwnVersion(), logPath: '', ...options });
  const client = createClient(new HubTasks(linkedHub(host), async () => undefined));
  return {
    client,
    host,
    async close() {
      await client.close();
      host.close();
    },
  };
}

/** Through JSON, as the wire carries it. */
const wire = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

function linkedHub(host: BrokerBridge): HubClient {
  const open = new Set<() => void>();
  let closed = false;

  async function call<M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> {
    return unwrapReply<BridgeResult<M>>(wire(await dispatch(host, method, wire(args))));
  }

  function subscribe(listener: (event: BridgeEvent) => void): () => void {
    const stop = host.subscribe((event) => listener(wire(event)));
    open.add(stop);
    return () => {
      open.delete(stop);
      stop();
    };
  }

  const hub = bridgeClient(call, subscribe) as HubClient;
  return Object.assign(hub, {
    path: 'memory',
    submitAndFollow: (request: SubmitRequest, listener: (event: TaskFeedEvent) => void) =>
      linkedFeed(host, open, (onEvent) => host.submitAndFollow(checkSubmitRequest(wire(request)), onEvent), listener, true),
    watch: (id: string, listener: (event: TaskFeedEvent) => void) =>
      linkedFeed(host, open, (onEvent) => host.watch(id, onEvent), listener, false),
    onLost: () => () => {},
    close() {
      if (closed) return;
      closed = true;
      for (const close of [...open]) close();
    },
  });
}

/**
 * A task's feed, as the control endpoint's follow stream: `start` begins it (and throws its refusal);
 * `attached`: closed before the task ended, the task is cancelled. `open` holds the feeds to close.
 */
function linkedFeed(
  host: BrokerBridge,
  open: Set<() => void>,
  start: (listener: (event: TaskFeedEvent) => void) => { id?: string; stop(): void },
  listener: (event: TaskFeedEvent) => void,
  attached: boolean,
): FollowedSubmission {
  let done = false;
  let taskId: string | undefined;
  let resolveEnded!: () => void;
  let rejectEnded!: (error: Error) => void;
  const ended = new Promise<void>((resolve, reject) => ((resolveEnded = resolve), (rejectEnded = reject)));
  ended.catch(() => {});
  let stopFeed = (): void => {};
  const finish = (): void => {
    done = true;
    open.delete(close);
    stopFeed();
  };
  const close = (): void => {
    if (done) return;
    finish();
    rejectEnded(new Error('stopped following the task'));
    if (attached && taskId !== undefined) {
      const id = taskId;
      void host
        .getTask(id)
        .then(({ task }) => (isFinished(task.state) ? undefined : host.cancel(id, FRONT_END_GONE)))
        .catch(() => {});
    }
  };
  const onEvent = (event: TaskFeedEvent): void => {
    if (done) return;
    taskId = event.task.id;
    listener(wire(event));
    if (event.update?.kind === 'exited' || (!event.update && !attached && isFinished(event.task.state))) {
      finish();
      resolveEnded();
    }
  };
  let id: Promise<string>;
  try {
    const started = start(onEvent);
    stopFeed = started.stop;
    if (done) started.stop();
    else open.add(close);
    id = Promise.resolve(started.id ?? taskId ?? '');
  } catch (error) {
    // A refusal as the client side gets it: the `BridgeError` its error body becomes.
    const refusal = errorFromBody(toErrorBody(error));
    id = Promise.reject(refusal);
    rejectEnded(refusal);
  }
  id.catch(() => {});
  return { id, ended, close };
}
