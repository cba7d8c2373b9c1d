/**
 * The hub's task calls: reading tasks (lists, one task with its log, its whole result — for the
 * HTTP servers, a result kept on disk as its file, sent without being parsed — an attachment) and
 * starting or changing one (submit, cancel, retry, annotate), each refused with `conflict` when the
 * task's state does not allow it.
 */
import type { BackchannelBridge, SubmitRequest, TaskDetails } from '../../bridge/contract.js';
import { ANNOTATIONS, checkWith } from '../../bridge/checks.js';
import { BridgeError } from '../../model/errors.js';
import { specOfRequest } from '../../model/spec-wire.js';
import { isFinished, MAX_TASK_PAGE_SIZE, TASK_PAGE_SIZE } from '../../model/task.js';
import type { TaskPage, TaskPageQuery, TaskSnapshot, TaskSpec } from '../../model/task.js';
import type { BrokerLike } from '../broker-like.js';
import type { ResultFile } from '../../broker/history/results.js';
import type { FinalPayload } from '../../protocol/index.js';
import { handleOf, requireTask } from './common.js';

/** The calls that read tasks: lists, one task with its log, its whole result, an attachment. */
export function readCalls(
  broker: BrokerLike,
): Pick<BackchannelBridge, 'listTasks' | 'listTaskPage' | 'getTask' | 'taskResult' | 'attachment'> {
  return {
    async listTasks() {
      return broker.tasks();
    },
    async listTaskPage(query) {
      return broker.taskPage ? broker.taskPage(query) : pageOf(broker.tasks(), query);
    },
    async getTask(id): Promise<TaskDetails> {
      const task = requireTask(broker, id);
      return { task, log: broker.logOf(id) };
    },
    async taskResult(id) {
      return wholeResultOf(broker, requireTask(broker, id));
    },
    async attachment(id, name) {
      const task = requireTask(broker, id);
      const header = (task.result?.attachments ?? task.resultSummary?.attachments)?.find((a) => a.name === name);
      const content = header && broker.attachment?.(id, name);
      if (!header || content === undefined) throw new BridgeError('not_found', `Task ${id} has no attachment ${name} (any more)`);
      const bytes =
        typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
      return { name, bytes: bytes.length, encoding: header.encoding ?? 'binary', base64: bytes.toString('base64') };
    },
  };
}

/** A task's whole result as the hub's HTTP route sends it: its file on disk as it is, else the value. */
export type WholeResult = { file: ResultFile } | { value: FinalPayload | null };

/** What the hub's HTTP servers add to the bridge's `taskResult`. */
export interface WholeResults {
  /**
   * `taskResult`'s answer, with a result kept on disk as its open file (the caller sends it and closes
   * it) instead of parsed: the file holds the same JSON text `taskResult`'s value serializes to.
   */
  wholeResult(id: string): Promise<WholeResult>;
}

/** `WholeResults` over the broker. */
export function wholeResultCall(broker: BrokerLike): WholeResults {
  return {
    async wholeResult(id) {
      const task = requireTask(broker, id);
      const file = broker.resultFile?.(id);
      // null: the file is missing or refused (warned): `taskResult` answers null then too.
      if (file !== undefined) return file ? { file } : { value: null };
      return { value: wholeResultOf(broker, task) };
    },
  };
}

/** A known task's whole final payload (see `BrokerLike.result`); null when it has none. */
function wholeResultOf(broker: BrokerLike, task: TaskSnapshot): FinalPayload | null {
  const whole = broker.result ? broker.result(task.id) : task.result;
  if (whole === undefined && task.resultSummary) throw new BridgeError('not_found', `Task ${task.id} is no longer in history`);
  return whole ?? null;
}

/** The calls that start or change a task, each refused with `conflict` when the task's state does not allow it. */
export function taskCalls(broker: BrokerLike): Pick<BackchannelBridge, 'submit' | 'cancel' | 'retry' | 'annotate'> {
  return {
    async submit(request) {
      // Acknowledged once durable (see task-feed.ts, followSubmission).
      const { id, accepted } = handleOf(() => broker.submit(toSpec(request)));
      await accepted;
      return { id };
    },
    async cancel(id, reason) {
      const task = requireTask(broker, id);
      if (isFinished(task.state)) {
        throw new BridgeError('conflict', `Task ${id} already ended (${task.state}); there is nothing to cancel`);
      }
      if (!broker.cancel(id, reason)) throw new BridgeError('conflict', `Task ${id} could not be cancelled (${task.state})`);
    },
    async retry(id) {
      const task = requireTask(broker, id);
      if (!isFinished(task.state)) {
        throw new BridgeError('conflict', `Task ${id} is still ${task.state}; retry it once it has ended`);
      }
      const started = handleOf(() => broker.retry(id));
      await started.accepted;
      return { id: started.id };
    },
    async annotate(id, meta) {
      const task = requireTask(broker, id);
      if (!broker.annotate) throw new BridgeError('conflict', `Task ${id} cannot be annotated here (a read-only history)`);
      if (!broker.annotate(id, checkWith(ANNOTATIONS, meta, 'meta'))) throw new BridgeError('conflict', notAnnotatable(id, task.state));
    },
  };
}

/** A page of `tasks` (oldest first) for a broker without `taskPage`: newest first, cursor = the last task's id. */
function pageOf(tasks: TaskSnapshot[], query: TaskPageQuery): TaskPage {
  const limit = Math.min(query.limit ?? TASK_PAGE_SIZE, MAX_TASK_PAGE_SIZE);
  const states = query.state === undefined ? undefined : new Set(Array.isArray(query.state) ? query.state : [query.state]);
  const newest = tasks.filter((task) => !states || states.has(task.state)).reverse();
  const at = query.before === undefined ? -1 : newest.findIndex((task) => task.id === query.before);
  const start = at + 1;
  const slice = newest.slice(start, start + limit);
  const page: TaskPage = { tasks: slice, total: newest.length };
  if (start + limit < newest.length && slice.length > 0) page.next = slice.at(-1)!.id;
  return page;
}

/** The broker's spec for a request: its every field (spec-wire.ts); tagged as coming from the panel unless it says who sent it. */
export function toSpec(request: SubmitRequest): TaskSpec {
  const spec = specOfRequest(request);
  spec.tags = { source: 'panel', ...request.tags };
  // A request that does not say which door it came through is judged as any other program's.
  spec.origin = request.origin ?? 'control';
  return spec;
}

/** Why a task cannot be annotated now (it has ended: its meta is written). */
export function notAnnotatable(id: string, state: string): string {
  return `Task ${id} has ended (${state}); annotate a task while it runs`;
}
