/**
 * "Run one task for a request": the part every front-end that answers a request with a sub-agent
 * shares (the OpenAI gateway today; an MCP server or other model APIs as small adapters on top).
 *
 * ```ts
 * const runner = createRequestTaskRunner({ broker, timeoutMs: 300_000, maxConcurrent: 5, name: 'gateway' });
 * const abort = abortOnDisconnect(res);          // on the first byte
 * const sse = new SseResponder(res);
 * const run = runner.start({ spec, abort, onUpdate: (update) => sse.start({}, sseEvent(update)) });
 * try { … await run.result … } catch (error) { describeFailure(error, { why: run.why, … }) } finally { sse.close() }
 * ```
 */
export { describeFailure, stoppedText, type DescribeFailureContext, type TaskFailure } from './failure.js';
export { abortOnDisconnect, DEFAULT_KEEP_ALIVE_MS, sseEvent, SseResponder } from './http.js';
export type { BackchannelClient, TaskLoad } from '../../client/index.js';
export {
  createRequestTaskRunner,
  QueueFullError,
  RETRY_AFTER_SECONDS,
  type CancelWhy,
  type RequestTask,
  type RequestTaskOptions,
  type RequestTaskRunner,
  type RequestTaskRunnerOptions,
  type TaskResult,
} from './runner.js';
