/**
 * How each bridge call maps onto HTTP, in one table the server (parse) and the browser client
 * (build) share, so they cannot drift apart. JSON in, JSON out; the token travels in a header.
 */
import type { BridgeArgs, BridgeMethod } from './calls.js';

/** Header that carries the per-launch token on API calls (EventSource uses `?token=` instead). */
export const TOKEN_HEADER = 'x-backchannel-token';
export const API_PREFIX = '/api/';
export const EVENTS_PATH = '/api/events';

export interface HttpRequestShape {
  verb: 'GET' | 'POST' | 'PUT';
  /** Path below the origin, already URL-encoded. */
  path: string;
  body?: unknown;
}

const enc = encodeURIComponent;

/** Client side: the HTTP request for one call. */
export function buildRequest<M extends BridgeMethod>(method: M, args: BridgeArgs<M>): HttpRequestShape {
  const a = args as unknown[];
  switch (method) {
    case 'info':
      return { verb: 'GET', path: '/api/info' };
    case 'listTasks':
      return { verb: 'GET', path: '/api/tasks' };
    case 'getTask':
      return { verb: 'GET', path: `/api/tasks/${enc(String(a[0]))}` };
    case 'submit':
      return { verb: 'POST', path: '/api/tasks', body: a[0] };
    case 'cancel':
      return { verb: 'POST', path: `/api/tasks/${enc(String(a[0]))}/cancel` };
    case 'retry':
      return { verb: 'POST', path: `/api/tasks/${enc(String(a[0]))}/retry` };
    case 'answer':
      return { verb: 'POST', path: `/api/tasks/${enc(String(a[0]))}/answer`, body: { askId: a[1], answer: a[2] } };
    case 'setPaused':
      return { verb: 'PUT', path: '/api/paused', body: { paused: a[0] } };
    case 'openLog':
      return { verb: 'POST', path: '/api/log/open' };
    default:
      throw new Error(`no HTTP route for ${String(method)}`);
  }
}

/** Server side: which call an API request is, with its raw (not yet checked) arguments; undefined = no such route. */
export function parseRequest(verb: string, pathname: string, body: unknown): { method: BridgeMethod; args: unknown[] } | undefined {
  const parts = pathname.split('/').slice(2); // '', 'api', ...
  const field = (name: string): unknown =>
    typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
  let id: string;
  try {
    id = decodeURIComponent(parts[1] ?? '');
  } catch {
    return undefined;
  }
  const route = `${verb} ${parts[0] ?? ''}${parts.length > 1 ? '/:id' : ''}${parts.length > 2 ? `/${parts.slice(2).join('/')}` : ''}`;
  switch (route) {
    case 'GET info':
      return { method: 'info', args: [] };
    case 'GET tasks':
      return { method: 'listTasks', args: [] };
    case 'GET tasks/:id':
      return { method: 'getTask', args: [id] };
    case 'POST tasks':
      return { method: 'submit', args: [body] };
    case 'POST tasks/:id/cancel':
      return { method: 'cancel', args: [id] };
    case 'POST tasks/:id/retry':
      return { method: 'retry', args: [id] };
    case 'POST tasks/:id/answer':
      return { method: 'answer', args: [id, field('askId'), field('answer')] };
    case 'PUT paused':
      return { method: 'setPaused', args: [field('paused')] };
    case 'POST log/:id':
      return parts[1] === 'open' && parts.length === 2 ? { method: 'openLog', args: [] } : undefined;
    default:
      return undefined;
  }
}
