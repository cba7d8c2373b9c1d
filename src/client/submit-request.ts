/** An in-process task spec as the hub's `SubmitRequest`, for front-ends that hand their tasks to a hub. */
import { resolve } from 'node:path';
import type { SubmitRequest } from '../bridge/contract.js';
import { requestOfSpec } from '../model/spec-wire.js';
import type { TaskSpec } from '../model/task.js';

/**
 * Every field of the request schema, copied from the spec (src/model/spec-wire.ts). The hub runs in
 * another directory, so the working directory and a relative command become absolute. What a request
 * cannot carry is refused rather than dropped: an `env` entry that removes a name (`undefined`), a
 * retry policy object. A `signal` stays with the caller, who cancels through the hub.
 */
export function requestForHub(spec: TaskSpec): SubmitRequest {
  const cwd = resolve(spec.cwd ?? process.cwd());
  const looksLikePath = spec.command.includes('/') && !spec.command.startsWith('/');
  const command = looksLikePath ? resolve(cwd, spec.command) : spec.command;
  return { ...requestOfSpec(spec), command, args: spec.args ?? [], cwd };
}
