/**
 * One bridge call over HTTP, server side: the JSON body (if any), the route from the one table,
 * `dispatch`, and the reply with its status. Shared by the panel server (TCP, token-guarded) and the
 * control endpoint (a private Unix socket).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BackchannelBridge } from '../../bridge/contract.js';
import { checkArgs, dispatch } from '../../bridge/calls.js';
import { httpStatusOf, toErrorBody } from '../../model/errors.js';
import type { WholeResult, WholeResults } from '../calls/tasks.js';
import { sendResultFile } from './result-file.js';
import { withOrigin } from '../../bridge/checks.js';
import { parseRequest } from '../../bridge/http-routes.js';
import { formatLimit, MAX_SUBMIT_BYTES } from '../../model/limits.js';
import type { TaskOrigin } from '../../model/task.js';
import { readBody, sendError, sendJson } from './responses.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../protocol/index.js';

/**
 * `door`: the origin every submission (and schedule) through this server has, whatever its body says (the panel's
 * server: `panel`); without it a request declares its own (the control endpoint, private to the owner).
 */
export async function handleApi(
  bridge: BackchannelBridge & Partial<WholeResults>,
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  door?: TaskOrigin,
): Promise<void> {
  const body = await readJsonBody(req, res, MAX_SUBMIT_BYTES);
  if (body === REFUSED) return;
  const call = parseRequest(req.method ?? 'GET', pathname, body);
  if (!call) return sendError(res, 404, 'not_found', `No API route ${req.method} ${pathname}`);
  if (door && (call.method === 'submit' || call.method === 'addSchedule')) call.args = [withOrigin(call.args[0], door)];
  if (call.method === 'taskResult' && bridge.wholeResult) return sendWholeResult(bridge.wholeResult, call.args, res);
  const reply = await dispatch(bridge, call.method, call.args);
  if (reply.ok) return sendJson(res, 200, reply.value);
  return sendJson(res, httpStatusOf(reply.error.code), { error: reply.error });
}

/**
 * `taskResult` over HTTP: a result kept on disk is sent from its file as it is (./result-file.ts),
 * the same bytes `dispatch` and `sendJson` would make of it, without parsing it; any other answer (or
 * error) as `dispatch` gives it.
 */
async function sendWholeResult(wholeResult: WholeResults['wholeResult'], args: unknown[], res: ServerResponse): Promise<void> {
  let whole: WholeResult;
  try {
    const [id] = checkArgs('taskResult', args);
    whole = await wholeResult(id);
  } catch (error) {
    const body = toErrorBody(error);
    return sendJson(res, httpStatusOf(body.error.code), { error: body.error });
  }
  if ('file' in whole) return sendResultFile(res, whole.file);
  return sendJson(res, 200, whole.value);
}

/** `readJsonBody` answered the request with an error already. */
export const REFUSED = Symbol('refused');

/**
 * The JSON body of a POST or PUT (undefined when empty or another verb), or `REFUSED` after
 * answering 413 (too big), 415 (not JSON) or 400 (malformed).
 */
export async function readJsonBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<unknown> {
  if (req.method !== 'POST' && req.method !== 'PUT') return undefined;
  const type = req.headers['content-type'] ?? '';
  const raw = await readBody(req, maxBytes);
  if (raw === undefined) {
    sendError(res, 413, 'invalid_request', `The request is over the ${formatLimit(maxBytes)} limit of one submission`);
    return REFUSED;
  }
  if (raw.length === 0) return undefined;
  if (!type.toLowerCase().startsWith('application/json')) {
    sendError(res, 415, 'invalid_request', 'Send JSON (Content-Type: application/json)');
    return REFUSED;
  }
  const text = raw.toString('utf8');
  // A value nested this deep would be kept in history (an input) and break its listings (see MAX_JSON_DEPTH).
  if (nestedDeeperThan(text)) {
    sendError(res, 400, 'invalid_request', `The request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    return REFUSED;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    sendError(res, 400, 'invalid_request', 'The request body is not valid JSON');
    return REFUSED;
  }
}
