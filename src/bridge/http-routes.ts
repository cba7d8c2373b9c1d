/**
 * How each bridge call maps onto HTTP, derived from the one route table (`ROUTES` in ./calls.ts)
 * in both directions: the browser client builds requests with `buildRequest`, the server reads them
 * with `parseRequest`, so they cannot drift apart. JSON in, JSON out; the token travels in a header.
 */
import { BRIDGE_METHODS, ROUTES, type BridgeArgs, type BridgeMethod } from './calls.js';
import { API_PREFIX } from './http-names.js';

export { API_PREFIX, TOKEN_HEADER } from './http-names.js';
export const EVENTS_PATH = '/api/events';
/**
 * Control endpoint only: `POST` a `SubmitRequest`, read NDJSON `TaskFeedEvent` lines until the task's
 * `exited`; `GET FOLLOW_PATH/<id>` reads an existing task's the same way.
 */
export const FOLLOW_PATH = '/api/follow';

/** The argument name that stands for the whole JSON body. */
const WHOLE_BODY = 'body';

export interface HttpRequestShape {
  verb: 'GET' | 'POST' | 'PUT';
  /** Path below the origin, already URL-encoded. */
  path: string;
  body?: unknown;
}

function pathParams(path: string): Set<string> {
  return new Set(
    path
      .split('/')
      .filter((segment) => segment.startsWith(':'))
      .map((segment) => segment.slice(1)),
  );
}

/** Client side: the HTTP request for one call. */
export function buildRequest<M extends BridgeMethod>(method: M, args: BridgeArgs<M>): HttpRequestShape {
  const route = ROUTES[method];
  const values = new Map(route.args.map((name, i) => [name, (args as readonly unknown[])[i]]));
  const inPath = pathParams(route.path);
  const path = route.path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? encodeURIComponent(String(values.get(segment.slice(1)))) : segment))
    .join('/');
  const request: HttpRequestShape = { verb: route.verb, path: API_PREFIX + path };
  const fields = route.args.filter((name) => !inPath.has(name));
  if (fields.includes(WHOLE_BODY)) request.body = values.get(WHOLE_BODY);
  else if (fields.length > 0) request.body = Object.fromEntries(fields.map((name) => [name, values.get(name)]));
  return request;
}

/** Server side: which call an API request is, with its raw (not yet checked) arguments; undefined = no such route. */
export function parseRequest(verb: string, pathname: string, body: unknown): { method: BridgeMethod; args: unknown[] } | undefined {
  if (!pathname.startsWith(API_PREFIX)) return undefined;
  const segments = pathname.slice(API_PREFIX.length).split('/');
  for (const method of BRIDGE_METHODS) {
    const route = ROUTES[method];
    if (route.verb !== verb) continue;
    const params = matchPath(route.path, segments);
    if (!params) continue;
    const field = (name: string): unknown =>
      typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
    const args = route.args.map((name) => (params.has(name) ? params.get(name) : name === WHOLE_BODY ? body : field(name)));
    return { method, args };
  }
  return undefined;
}

/** The `:name` values of a path that matches `pattern`, or undefined (also for a badly encoded segment). */
function matchPath(pattern: string, segments: string[]): Map<string, string> | undefined {
  const parts = pattern.split('/');
  if (parts.length !== segments.length) return undefined;
  const params = new Map<string, string>();
  for (const [i, part] of parts.entries()) {
    const segment = segments[i] ?? '';
    if (!part.startsWith(':')) {
      if (part !== segment) return undefined;
      continue;
    }
    try {
      params.set(part.slice(1), decodeURIComponent(segment));
    } catch {
      return undefined;
    }
  }
  return params;
}
