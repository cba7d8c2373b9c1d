/**
 * A sub-agent's question as a 2026-07-28 input request, and the client's reply as its answer — the one mapping both
 * modern paths use: the multi-round-trip `input_required` result of a waiting `run_task` (./modern-server.ts) and a
 * task's `inputRequests` / `tasks/update` of the Tasks extension (./task-extension.ts).
 *
 * - The request's key is the question's `askId`: unique over the task's life, as both specifications require, so a
 *   reply can never answer a later question.
 * - Only an accepted reply with a string `answer` answers; a decline, a cancel, a reply to a key that is not the
 *   pending question, or a malformed reply leaves the question pending (answer_question or the panel still can).
 */
import * as z from 'zod';
import type { BackchannelClient } from '../client/index.js';
import type { TaskSnapshot } from '../model/task.js';
import { withContext } from './snapshots.js';

/** One embedded `elicitation/create` request (form mode), as the specification's `InputRequest`. */
export interface ElicitInputRequest {
  method: 'elicitation/create';
  params: { mode: 'form'; message: string; requestedSchema: Record<string, unknown> };
}

/** The reply the form asks for: `{ action: 'accept', content: { answer } }` (other fields are the client's). */
const ACCEPTED_ANSWER = z.object({ action: z.literal('accept'), content: z.object({ answer: z.string() }) });

/** The task's pending question as `inputRequests` (keyed by its askId); undefined when it asks nothing. */
export function questionInputRequests(task: TaskSnapshot): Record<string, ElicitInputRequest> | undefined {
  const question = task.pendingQuestion;
  if (!question) return undefined;
  const answer = question.choices?.length
    ? { type: 'string', title: 'Answer', enum: question.choices }
    : { type: 'string', title: 'Answer' };
  return {
    [question.askId]: {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: withContext(`Sub-agent "${task.label}" asks: ${question.question}`, question),
        requestedSchema: { type: 'object', properties: { answer }, required: ['answer'] },
      },
    },
  };
}

/**
 * Answers the task's pending question from `responses` (the client's `inputResponses`), when they hold an accepted
 * answer to it. Returns true when it answered.
 */
export async function answerFromResponses(
  client: Pick<BackchannelClient, 'answer'>,
  task: TaskSnapshot,
  responses: Record<string, unknown> | undefined,
): Promise<boolean> {
  const question = task.pendingQuestion;
  if (!question || !responses || !Object.hasOwn(responses, question.askId)) return false;
  const reply = ACCEPTED_ANSWER.safeParse(responses[question.askId]);
  if (!reply.success) return false;
  await client.answer(task.id, question.askId, reply.data.content.answer, 'mcp');
  return true;
}
