/**
 * The names every HTTP client of the bridge needs, in a file of their own with no imports, so the
 * panel's first script (src/renderer/boot.ts) can use them without the route table and its checks.
 * ./http-routes.ts re-exports them.
 */

/** Header that carries the per-launch token on API calls (EventSource uses `?token=` instead). */
export const TOKEN_HEADER = 'x-backchannel-token';
export const API_PREFIX = '/api/';
