/**
 * The panel's first calls, asked for before its own script has loaded (docs/performance.md, "Issue 48,
 * round 6: the diff panel"). boot.ts (its own small file, run first) sends them; the HTTP bridge takes
 * each answer once, for the same request, in place of sending it again. So the hub answers while
 * panel.js is still fetched, parsed and run, instead of after.
 *
 * Only the first paint's calls are sent early: the two task pages, and for a panel opened on a task
 * by its link (`#task=<id>`), the task and its change. The requests are the ones `buildRequest` makes
 * for the same calls (test/renderer/first-calls.test.ts), so an early answer is what the call gets.
 * This file imports no checks (zod): the boot file stays a few hundred bytes.
 */
import type { TaskPageQuery, TaskState } from '../bridge/contract.js';
import { MAX_TASK_PAGE_SIZE, TASK_PAGE_SIZE } from '../bridge/contract.js';
import { API_PREFIX, TOKEN_HEADER } from '../bridge/http-names.js';

/** The states of tasks that are not finished: every one of them is in the first paint (running first). */
export const LIVE_STATES: TaskState[] = ['running', 'retrying', 'queued'];
/**
 * The first paint's two pages: every live task, and the newest TASK_PAGE_SIZE of all. Keys in the
 * order the bridge's check gives them back (its schema's), so an early request's body is the same text.
 */
export const FIRST_PAGES: readonly [TaskPageQuery, TaskPageQuery] = [
  { limit: MAX_TASK_PAGE_SIZE, state: LIVE_STATES },
  { limit: TASK_PAGE_SIZE },
];

/** How long an early answer is taken as it is: only the panel's start uses them. */
export const EARLY_FRESH_MS = 10_000;

/** One request as the HTTP bridge sends it (a subset of http-routes' `HttpRequestShape`). */
export interface EarlyRequest {
  verb: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
}

/** The answers boot.ts asked for, by `requestKey`, with when they were asked for. */
export type EarlyAnswers = Map<string, { at: number; answer: Promise<Response> }>;

declare global {
  interface Window {
    /** Left by boot.js for the HTTP bridge (absent in the desktop app, whose bridge is the preload's). */
    backchannelEarly?: EarlyAnswers;
  }
}

/** The task a panel address names (`#task=<id>`), or undefined. */
export function linkedTask(hash: string): string | undefined {
  const match = /^#task=(.+)$/.exec(hash);
  try {
    return match?.[1] ? decodeURIComponent(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The first paint's requests for a panel opened at `hash`, in the order they are sent. */
export function firstRequests(hash: string): EarlyRequest[] {
  const requests: EarlyRequest[] = FIRST_PAGES.map((query) => ({ verb: 'POST', path: `${API_PREFIX}tasks/page`, body: query }));
  const id = linkedTask(hash);
  if (id !== undefined) {
    const task = `${API_PREFIX}tasks/${encodeURIComponent(id)}`;
    // The change first: the bigger answer, and the one the diff waits for.
    requests.push({ verb: 'GET', path: `${task}/change` }, { verb: 'GET', path: task });
  }
  return requests;
}

/** The same key for the same request, whoever built it. */
export function requestKey(request: EarlyRequest): string {
  return `${request.verb} ${request.path} ${request.body === undefined ? '' : JSON.stringify(request.body)}`;
}

/** The fetch options of the HTTP bridge's calls: the token in its header, never cached. */
export function requestInit(request: EarlyRequest, token: string): RequestInit {
  const headers: Record<string, string> = { [TOKEN_HEADER]: token, Accept: 'application/json' };
  if (request.body === undefined) return { method: request.verb, headers, cache: 'no-store' };
  headers['Content-Type'] = 'application/json';
  return { method: request.verb, headers, body: JSON.stringify(request.body), cache: 'no-store' };
}

/** Sends the first paint's requests and leaves their answers on `window` (boot.ts). */
export function sendFirstRequests(token: string, now = Date.now()): EarlyAnswers {
  const answers: EarlyAnswers = new Map();
  for (const request of firstRequests(location.hash)) {
    const answer = fetch(location.origin + request.path, requestInit(request, token));
    // Handled by whoever takes it; one never taken (an id the bridge refuses) is no unhandled rejection.
    answer.catch(() => {});
    answers.set(requestKey(request), { at: now, answer });
  }
  return answers;
}

/** The early answer to `request`, once and while fresh; undefined when there is none. */
export function takeEarly(answers: EarlyAnswers | undefined, request: EarlyRequest, now = Date.now()): Promise<Response> | undefined {
  if (!answers) return undefined;
  const key = requestKey(request);
  const early = answers.get(key);
  if (!early) return undefined;
  answers.delete(key);
  return now - early.at <= EARLY_FRESH_MS ? early.answer : undefined;
}
