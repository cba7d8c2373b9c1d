/**
 * Who may talk to a server of ours on loopback: only the person who started it. Used by the
 * headless panel (all three checks) and the gateway (the first two; it has its own key). Three
 * checks, in this order, each a small pure function so tests can call them directly:
 *   1. `Host` must name a loopback address and our port (defeats DNS rebinding) → 421
 *   2. a browser `Origin`, when sent, must be our own origin (no cross-site calls, no CORS) → 403
 *   3. the per-launch token must match (header, or `?token=` for the page and EventSource) → 401
 * (The status codes are the panel's; the gateway answers 403 to both of the first two.)
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** Host names that always mean this machine. */
export const LOOPBACK_HOSTS: readonly string[] = ['127.0.0.1', 'localhost', '[::1]'];

/** 32 random bytes as hex: unguessable, URL-safe, new for every launch. */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

/** `Host` header check: a loopback name and exactly our port. */
export function isAllowedHost(host: string | undefined, port: number): boolean {
  if (!host) return false;
  const lower = host.toLowerCase();
  return LOOPBACK_HOSTS.some((name) => lower === `${name}:${port}`);
}

/** `Origin` header check: absent (same-origin GET, curl) or one of our own origins. */
export function isAllowedOrigin(origin: string | undefined, port: number): boolean {
  if (origin === undefined) return true;
  return LOOPBACK_HOSTS.some((name) => origin.toLowerCase() === `http://${name}:${port}`);
}

/** Constant-time token comparison. */
export function tokenMatches(given: string | null | undefined, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Content-Security-Policy of every response: only our own scripts, styles and connections; no
 * inline code, no eval, no frames, no forms posting elsewhere. Matches the meta tag in index.html.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers every response carries; `Referrer-Policy` keeps the token in the URL from leaking. */
export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};
