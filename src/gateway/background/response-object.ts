/**
 * A background response's wire shapes: its id (the task's id, so it outlives the gateway), the
 * `response` object as the Responses API returns it from create, retrieve and cancel (the fields the
 * official SDKs' `Response` type requires, `background: true`), and its stream events, each with the
 * next `sequence_number` of that response.
 */
import { responsesUsage, type Usage } from '../openai-shapes.js';

/** `resp_` and the task id's 32 hex digits: the id is the task id, so any gateway on the hub finds it. */
const RESPONSE_ID = /^resp_([0-9a-f]{8})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{12})$/;

export function responseIdOf(taskId: string): string {
  return `resp_${taskId.replace(/-/g, '')}`;
}

/** The task id a response id stands for, or undefined when it is no id of a background response. */
export function taskIdOf(responseId: string): string | undefined {
  const parts = RESPONSE_ID.exec(responseId);
  return parts ? parts.slice(1).join('-') : undefined;
}

/** The Responses API's statuses a background response goes through. */
export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled';

/** What a `response` object is made from. */
export interface ResponseFacts {
  taskId: string;
  model: string;
  /** The request's parameters as the object repeats them (`instructions`, `tools`, … : see responses.ts). */
  echo: Record<string, unknown>;
  /** Unix seconds. */
  createdAt: number;
  status: ResponseStatus;
  /** Unix seconds, once completed. */
  completedAt?: number;
  /** The answer, once completed. */
  answer?: { text: string; usage: Usage };
  /** Why it failed. */
  error?: { code: 'server_error' | 'rate_limit_exceeded'; message: string };
  /**
   * What a failed or cancelled response's agent had written before its task was stopped: kept in
   * `output` as an `incomplete` message (docs/reliability.md: finished work is never thrown away).
   */
  keptText?: string;
}

/** The one output message's id: fixed by the task, so a retrieve after a restart names the same item. */
function itemId(taskId: string): string {
  return `msg_${taskId.replace(/-/g, '')}`;
}

export function outputItem(taskId: string, text: string | undefined) {
  return {
    id: itemId(taskId),
    type: 'message',
    status: text === undefined ? 'in_progress' : 'completed',
    role: 'assistant',
    content: text === undefined ? [] : [{ type: 'output_text', text, annotations: [] }],
  };
}

/** The `response` object; `usage` only once known (the SDKs' type has no `null` for it); no `output_text` (SDK-only). */
export function responseObject(facts: ResponseFacts): Record<string, unknown> {
  const { answer } = facts;
  const usage = answer && responsesUsage(answer.usage);
  return {
    id: responseIdOf(facts.taskId),
    object: 'response',
    created_at: facts.createdAt,
    status: facts.status,
    background: true,
    completed_at: facts.status === 'completed' ? (facts.completedAt ?? null) : null,
    error: facts.error ?? null,
    incomplete_details: null,
    model: facts.model,
    output: answer
      ? [outputItem(facts.taskId, answer.text)]
      : facts.keptText
        ? [{ ...outputItem(facts.taskId, facts.keptText), status: 'incomplete' }]
        : [],
    ...facts.echo,
    ...(usage ? { usage } : {}),
  };
}

/** One stream event as it is stored and sent. */
export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

/** The SSE text of one event. */
export function sseOf(event: ResponseEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * A response's events in order, numbered from 0, kept for replay (`starting_after`) until the
 * response is forgotten; listeners get each new one, and the end.
 */
export class ResponseEvents {
  readonly #events: ResponseEvent[] = [];
  readonly #listeners = new Set<{ event(e: ResponseEvent): void; end(): void }>();
  #ended = false;

  get ended(): boolean {
    return this.#ended;
  }

  get length(): number {
    return this.#events.length;
  }

  push(type: string, data: Record<string, unknown>): void {
    if (this.#ended) return;
    const event = { type, sequence_number: this.#events.length, ...data };
    this.#events.push(event);
    for (const listener of [...this.#listeners]) listener.event(event);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const listener of [...this.#listeners]) listener.end();
    this.#listeners.clear();
  }

  /**
   * Every event after sequence number `after` (-1: all), then each new one as it comes, then `end`.
   * Returns how to stop listening.
   */
  follow(after: number, event: (e: ResponseEvent) => void, end: () => void): () => void {
    for (const e of this.#events.slice(Math.max(0, after + 1))) event(e);
    if (this.#ended) {
      end();
      return () => {};
    }
    // `after` may lie past the last event so far (Y10n): the events up to it are not streamed either.
    const listener = { event: (e: ResponseEvent) => e.sequence_number > after && event(e), end };
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
