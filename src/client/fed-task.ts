/**
 * A task as a `TaskRun` fed by its own stream of `TaskFeedEvent`s — the hub's follow stream, or a
 * broker's updates of one task — so every front-end holds the same handle wherever the task runs.
 * The result settles from the `ended` picture with the model's failure mapping (`failureOf`).
 */
import type { TaskFeedEvent } from '../bridge/contract.js';
import { TaskError } from '../broker/errors.js';
import { failureOf, partialResultOf } from '../model/states.js';
import { isFinished, type TaskSnapshot, type TaskUpdate, type ToolAnswer } from '../model/task.js';
import type { FinalPayload } from '../protocol/index.js';
import type { TaskRun } from './tasks.js';
import type { AnswerDoor } from '../model/questions.js';

/** What the handle does for its owner: reach the task's broker. */
export interface TaskControls {
  cancel(id: string, reason?: string): Promise<void>;
  answer(id: string, askId: string, text: string, via?: AnswerDoor): Promise<void>;
  answerToolCall(id: string, callId: string, answer: ToolAnswer): Promise<void>;
  annotate(id: string, meta: Record<string, unknown>): Promise<void>;
  /** The whole final payload of a task whose picture holds only its summary. */
  result?(id: string): Promise<FinalPayload | null>;
}

export class FedTask implements TaskRun {
  #id: string;
  #snapshot: TaskSnapshot | undefined;
  #settled = false;
  #stopFeed: (() => void) | undefined;
  readonly #listeners = new Set<(update: TaskUpdate) => void>();
  readonly result: Promise<FinalPayload>;
  readonly finished: Promise<void>;
  #settle!: { resolve(payload: FinalPayload): void; reject(error: Error): void };
  #exited!: () => void;

  constructor(
    private readonly controls: TaskControls,
    id = '',
  ) {
    this.#id = id;
    this.result = new Promise<FinalPayload>((resolve, reject) => (this.#settle = { resolve, reject }));
    this.result.catch(() => {}); // awaited by its owner; never an unhandled rejection meanwhile
    this.finished = new Promise<void>((resolve) => (this.#exited = resolve));
  }

  get id(): string {
    return this.#id;
  }

  /** What ends the feed when the owner calls `stop()`. */
  feedBy(stop: () => void): void {
    this.#stopFeed = stop;
  }

  stop(): void {
    this.#listeners.clear();
    this.#stopFeed?.();
  }

  /** One event of the task's stream, in order. */
  receive({ task, update }: TaskFeedEvent): void {
    this.#id = task.id;
    this.#snapshot = task;
    if (update?.kind === 'ended' || (!update && isFinished(task.state))) this.#settleFrom(task);
    if (update) for (const listener of [...this.#listeners]) listener(update);
    if (update?.kind === 'exited') this.#exited();
  }

  /** The stream ended: after `exited` normally; `error` when it broke first (the hub went away). */
  end(error?: Error): void {
    if (error) this.#fail(error);
    this.#exited(); // nothing of it left to wait for here: its processes are its broker's
  }

  snapshot(): TaskSnapshot {
    if (!this.#snapshot) throw new Error('The broker has not reported this task yet');
    return this.#snapshot;
  }

  on(_event: 'update', listener: (update: TaskUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  cancel(reason?: string): void {
    void this.controls.cancel(this.#id, reason).catch(() => {}); // already ended, or its broker is gone (the stream says so)
  }

  answer(askId: string, text: string, via?: AnswerDoor): Promise<void> {
    return this.controls.answer(this.#id, askId, text, via);
  }

  answerToolCall(callId: string, answer: ToolAnswer): Promise<void> {
    return this.controls.answerToolCall(this.#id, callId, answer);
  }

  annotate(meta: Record<string, unknown>): Promise<void> {
    return this.controls.annotate(this.#id, meta);
  }

  #fail(error: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle.reject(error);
  }

  #settleFrom(task: TaskSnapshot): void {
    if (this.#settled) return;
    if (task.state === 'succeeded') {
      this.#settled = true;
      if (task.result) return this.#settle.resolve(task.result);
      const whole = this.controls.result?.(task.id) ?? Promise.resolve(null);
      whole.then(
        (payload) =>
          payload ? this.#settle.resolve(payload) : this.#settle.reject(new Error(`Task ${task.id} succeeded but its result is gone`)),
        (error: Error) => this.#settle.reject(error),
      );
      return;
    }
    const failure = failureOf(task)!;
    this.#settled = true;
    const partialResult = partialResultOf(task);
    const options = { ...(task.detail !== undefined ? { detail: task.detail } : {}), ...(partialResult ? { partialResult } : {}) };
    this.#settle.reject(new TaskError(task.id, failure.reason, failure.message, task.result, task.stderrTail, options));
  }
}
