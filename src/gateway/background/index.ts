/**
 * Responses background mode (./responses.ts): the service, and the routes it adds to the gateway's
 * table — `GET /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`, `DELETE /v1/responses/{id}`.
 */
export { createBackgroundResponses, type BackgroundOptions, type BackgroundResponses } from './responses.js';
export { responseIdOf, taskIdOf } from './response-object.js';

/** What a request to a background response asks. */
export type ResponseAction = 'retrieve' | 'cancel' | 'delete';

const ONE_RESPONSE = /^\/v1\/responses\/([^/]+)(\/cancel)?\/?$/;

/** The action and response id of `METHOD path`, or undefined when it is none of the routes above. */
export function backgroundRoute(method: string | undefined, pathname: string): { action: ResponseAction; id: string } | undefined {
  const match = ONE_RESPONSE.exec(pathname);
  if (!match) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(match[1]!);
  } catch {
    id = match[1]!; // malformed %-escapes: no id of ours, so a 404 names it as sent
  }
  if (match[2]) return method === 'POST' ? { action: 'cancel', id } : undefined;
  if (method === 'GET') return { action: 'retrieve', id };
  if (method === 'DELETE') return { action: 'delete', id };
  return undefined;
}

/** Whether a `POST /v1/responses` body asks for background mode. */
export function isBackgroundRequest(body: unknown): body is Record<string, unknown> & { background: true } {
  return typeof body === 'object' && body !== null && (body as { background?: unknown }).background === true;
}
