/**
 * What an API adapter writes an answer through (`TurnWriter`), and what an answer is: text, the
 * agent's thinking when the client asked for it, and in bridge mode one step's tool calls.
 */
import type { TaskHandle } from '../client/index.js';
import type { HttpError } from './http.js';
import type { Usage } from './openai-shapes.js';

export interface TurnAnswer {
  text: string;
  usage: Usage;
}

/** A tool call as the client sees it (bridge mode): the gateway's id for it, the tool, its arguments. */
export interface ClientToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/**
 * How one API writes an answer; `task` is undefined for answers made without a sub-agent. An answer
 * is text, the agent's thinking (only when the client asked for it), and the tool calls of one step
 * (bridge mode): `finish` after a `toolCall` ends the answer with the API's tool-use stop.
 */
export interface TurnWriter {
  /** New answer text from a partial ('' when it carried none: the stream may still start). */
  delta(text: string, task: TaskHandle): void;
  /** A piece of the agent's thinking. */
  thinking(text: string, task: TaskHandle): void;
  /** One tool call for the client to run. */
  toolCall(call: ClientToolCall, task: TaskHandle): void;
  finish(answer: TurnAnswer, task: TaskHandle | undefined): void;
  fail(error: HttpError, task: TaskHandle | undefined): void;
  close(): void;
}

/** What a non-streamed answer has besides its text: the thinking and the tool calls of the step. */
export interface AnswerExtras {
  /** The agent's thinking, when the client asked for it and the agent had any. */
  thinking?: string;
  calls: ClientToolCall[];
}
