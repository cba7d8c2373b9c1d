/**
 * What an API adapter writes an answer through (`TurnWriter`), and what an answer is: text, the
 * agent's thinking when the client asked for it, and in bridge mode one step's tool calls; the
 * non-streamed writer every API uses (`jsonWriter`).
 */
import type { ServerResponse } from 'node:http';
import type { TaskHandle } from '../client/index.js';
import { sendJson, type HttpError } from './http.js';
import type { Usage } from './openai-shapes.js';

/** The response header naming the task that answered. */
export const TASK_ID_HEADER = 'X-Backchannel-Task-Id';

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

/**
 * The non-streamed writer every API uses: nothing until the end, then the answer as one JSON body
 * (`render`) with the task id header, or the error in the API's shape (`sendError`).
 */
export function jsonWriter(
  res: ServerResponse,
  render: (answer: TurnAnswer, extras: AnswerExtras) => unknown,
  sendError: (res: ServerResponse, error: HttpError, task: TaskHandle | undefined) => void,
): TurnWriter {
  const extras: AnswerExtras = { calls: [] };
  return {
    delta() {
      // The answer is sent whole at the end.
    },
    thinking(text) {
      extras.thinking = (extras.thinking ?? '') + text;
    },
    toolCall(call) {
      extras.calls.push(call);
    },
    finish(answer, task) {
      if (task) res.setHeader(TASK_ID_HEADER, task.id);
      sendJson(res, 200, render(answer, extras));
    },
    fail: (error, task) => sendError(res, error, task),
    close() {},
  };
}
