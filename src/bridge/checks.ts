/**
 * The arguments of the bridge's calls, as zod schemas (the route table in ./calls.ts names one per
 * argument). Each parses to a clean value or fails with one line in the repository's template
 * (src/model/shapes.ts), thrown as `BridgeError('invalid_request')`. The task request's schema is
 * the model's (`TASK_REQUEST`, src/model/task-request.ts).
 */
import * as z from 'zod/mini';
import { MAX_FIRE_PAGE_SIZE, MAX_TASK_PAGE_SIZE, type FirePageQuery, type SubmitRequest } from './contract.js';
import { TASK_STATES, type TaskOrigin, type TaskState } from '../model/task.js';
import { checkTaskRequest, CLEAN_TASK_REQUEST, id, isPlainName, MAX_ARGS, MAX_ID } from '../model/task-request.js';
import { boolean, describe, expected, oneOf, parseOrThrow, PLACE, text, withoutUndefined } from '../model/shapes.js';
import { ANSWER_DOORS, type AnswerDoor } from '../model/questions.js';
import { BridgeError, isRecord } from '../model/errors.js';
import { TOOL_ANSWER as TOOL_ANSWER_SHAPE } from '../model/tools.js';

export { describe, isPlainName };

const MAX_ANSWER = 64 * 1024;

export function invalid(message: string): BridgeError {
  return new BridgeError('invalid_request', message);
}

/** `value` parsed by `schema`, named `place` in the message; throws `BridgeError('invalid_request')`. */
export function checkWith<T extends z.core.$ZodType>(schema: T, value: unknown, place?: string): z.core.output<T> {
  return parseOrThrow(schema, value, invalid, place);
}

/** A task id, ask id or attachment name. */
export const ID = id();

/** A list of task ids (the changes to apply, in order). */
export const IDS = z
  .array(ID, { error: expected('a non-empty array of task ids') })
  .check(
    z.minLength(1, { error: expected('a non-empty array of task ids') }),
    z.maxLength(MAX_ARGS, { error: (issue) => `Expected at most ${MAX_ARGS} \`${PLACE}\`, got ${(issue.input as unknown[]).length}` }),
  );

/** The caller's answer to a tool call: `{content}` or `{error}`. */
export const TOOL_ANSWER = TOOL_ANSWER_SHAPE;

/** A caller's annotation of a task (`annotate`): a bounded JSON object. */
export { ANNOTATIONS } from '../model/annotations.js';

/** The text of an answer (may be empty). */
export const ANSWER = text({ allowEmpty: true, max: MAX_ANSWER });

/** The door an answer came through (optional: `control` when not said; `null`, as JSON writes a missing argument, is not said). */
export const ANSWER_DOOR = z.pipe(
  z.nullish(oneOf(ANSWER_DOORS)),
  z.transform((via: AnswerDoor | null | undefined) => via ?? undefined),
);

/** A cancel reason: optional, one line for the panel. */
export const REASON = z.pipe(
  z.nullish(text({ max: 500 })),
  z.transform((reason: string | null | undefined) => reason ?? undefined),
);

export const PAUSED = boolean();

/** The whole body of a submission: a clean copy of the task request. */
export const SUBMIT_REQUEST = CLEAN_TASK_REQUEST;

/** An ISO 8601 time, normalized (`toISOString`). */
const time = () =>
  z.pipe(
    text({ max: 64 }).check(z.refine((value: string) => Number.isFinite(Date.parse(value)), { error: expected('an ISO 8601 time') })),
    z.transform((value: string) => new Date(value).toISOString()),
  );

/** A query, or nothing (`undefined`, `null`: every task). */
function query<T extends z.core.$ZodType<object>>(shape: T) {
  return z.pipe(
    z.nullish(shape),
    z.transform((value: z.core.output<T> | null | undefined) => withoutUndefined(value ?? {}) as z.core.output<T>),
  );
}

const notAnObject = (issue: z.core.$ZodRawIssue) =>
  issue.code === 'invalid_type' ? `Expected the query to be an object, got ${describe(issue.input)}` : undefined;

export const INSIGHTS_QUERY = query(
  z.object(
    {
      since: z.optional(time()),
      until: z.optional(time()),
      agent: z.optional(text()),
      model: z.optional(text()),
      by: z.optional(
        z.enum(['agent', 'model'], {
          error: (issue) => `Expected \`${PLACE}\` to be "agent" or "model", got ${describe(issue.input)}`,
        }),
      ),
      pick: z.optional(z.object({ hour: time(), key: z.optional(text()) }, { error: expected('an object') })),
    },
    { error: notAnObject },
  ),
);

const STATE = z.enum(TASK_STATES as unknown as [TaskState, ...TaskState[]], { error: expected(`one of ${TASK_STATES.join(', ')}`) });

export const TASK_PAGE_QUERY = query(
  z.object(
    {
      limit: z.optional(
        z
          .number({ error: expected(`an integer from 1 to ${MAX_TASK_PAGE_SIZE}`) })
          .check(
            z.int({ error: expected(`an integer from 1 to ${MAX_TASK_PAGE_SIZE}`) }),
            z.minimum(1, { error: expected(`an integer from 1 to ${MAX_TASK_PAGE_SIZE}`) }),
            z.maximum(MAX_TASK_PAGE_SIZE, { error: expected(`an integer from 1 to ${MAX_TASK_PAGE_SIZE}`) }),
          ),
      ),
      before: z.optional(text({ max: MAX_ID * 2 })),
      // More states than there are is a list with repeats: the extra are dropped, not refused.
      state: z.optional(
        z.union([
          STATE,
          z.pipe(
            z.array(z.unknown()),
            z.pipe(
              z.transform((states: unknown[]) => states.slice(0, TASK_STATES.length)),
              z.array(STATE),
            ),
          ),
        ]),
      ),
    },
    { error: notAnObject },
  ),
);

/**
 * A submission as a door with a fixed origin passes it on (the panel's server and the app's IPC:
 * `panel`, whatever the body says); a body that is no object is left for `checkSubmitRequest` to refuse.
 */
export function withOrigin(body: unknown, door: TaskOrigin): unknown {
  return isRecord(body) ? { ...body, origin: door } : body;
}

/** Checks a submit request and returns a clean copy holding only the known fields (the schema: TASK_REQUEST). */
export function checkSubmitRequest(value: unknown): SubmitRequest {
  return checkTaskRequest(value, invalid);
}

/** A schedule's name as a lookup: any short text (an unknown one is `not_found`; `addSchedule` checks the form). */
export const SCHEDULE_NAME = text({ max: 200 });

/** The fields of a new schedule, checked with the schedule's one declaration (src/schedules/schedule.ts). */
export { SCHEDULE_REQUEST } from '../schedules/schedule.js';

const firePageSize = expected(`an integer from 1 to ${MAX_FIRE_PAGE_SIZE}`);

/** Which page of a schedule's fire records (`FirePageQuery`); nothing: the newest page. */
export const FIRE_PAGE_QUERY = query(
  z.object(
    {
      limit: z.optional(
        z
          .number({ error: firePageSize })
          .check(
            z.int({ error: firePageSize }),
            z.minimum(1, { error: firePageSize }),
            z.maximum(MAX_FIRE_PAGE_SIZE, { error: firePageSize }),
          ),
      ),
      before: z.optional(
        z
          .number({ error: expected("a non-negative integer (a page's `next`)") })
          .check(
            z.int({ error: expected("a non-negative integer (a page's `next`)") }),
            z.minimum(0, { error: expected("a non-negative integer (a page's `next`)") }),
          ),
      ),
    },
    { error: notAnObject },
  ),
) as z.ZodMiniType<FirePageQuery, unknown>;
