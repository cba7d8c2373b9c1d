/**
 * One bridge call over HTTP, server side: the JSON body (if any), the route from the one table,
 * `dispatch`, and the reply with its status. Shared by the panel server (TCP, token-guarded) and the
 * control endpoint (a private Unix socket).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BackchannelBridge } from '../../bridge/contract.js';
import { dispatch, HTTP_STATUS } from '../../bridge/calls.js';
import { parseRequest } from '../../bridge/http-routes.js';
import { MAX_BODY_BYTES, readBody, sendError, sendJson } from './responses.js';

export async function handleApi(bridge: BackchannelBridge, req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
  let body: unknown;
  if (req.method === 'POST' || req.method === 'PUT') {
    const type = req.headers['content-type'] ?? '';
    const raw = await readBody(req);
    if (raw === undefined) return sendError(res, 413, 'invalid_request', `Request body over ${MAX_BODY_BYTES} bytes`);
    if (raw.length > 0) {
      if (!type.toLowerCase().startsWith('application/json')) {
        return sendError(res, 415, 'invalid_request', 'Send JSON (Content-Type: application/json)');
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return sendError(res, 400, 'invalid_request', 'The request body is not valid JSON');
      }
    }
  }
  const call = parseRequest(req.method ?? 'GET', pathname, body);
  if (!call) return sendError(res, 404, 'not_found', `No API route ${req.method} ${pathname}`);
  const reply = await dispatch(bridge, call.method, call.args);
  if (reply.ok) return sendJson(res, 200, reply.value);
  return sendJson(res, HTTP_STATUS[reply.error.code], { error: reply.error });
}
