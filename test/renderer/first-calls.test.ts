import { describe, expect, test } from 'vitest';
import { checkArgs } from '../../src/bridge/calls.js';
import { buildRequest, TOKEN_HEADER } from '../../src/bridge/http-routes.js';
import {
  EARLY_FRESH_MS,
  FIRST_PAGES,
  firstRequests,
  requestInit,
  requestKey,
  takeEarly,
  type EarlyAnswers,
} from '../../src/renderer/first-calls.js';
import { createHttpBridge } from '../../src/renderer/http-bridge.js';

const ID = '01a2534b-a32f-70b1-af40-bc03cb550978';

/** The request the HTTP bridge builds for a call, as it builds it (checked arguments, then the route table). */
const bridgeRequest = (method: 'listTaskPage' | 'getTask' | 'taskChange', ...args: unknown[]) =>
  buildRequest(method, checkArgs(method, args));

describe("boot.js's first requests", () => {
  test('are the requests the bridge makes for the first paint’s calls, key for key', () => {
    const expected = [
      bridgeRequest('listTaskPage', FIRST_PAGES[0]),
      bridgeRequest('listTaskPage', FIRST_PAGES[1]),
      bridgeRequest('taskChange', ID),
      bridgeRequest('getTask', ID),
    ];
    const early = firstRequests(`#task=${ID}`);
    expect(early).toEqual(expected);
    expect(early.map(requestKey)).toEqual(expected.map(requestKey));
  });

  test('ask for the pages only without a task in the address, or with one that does not decode', () => {
    expect(firstRequests('').map(requestKey)).toEqual(FIRST_PAGES.map((query) => requestKey(bridgeRequest('listTaskPage', query))));
    expect(firstRequests('#insights')).toHaveLength(2);
    expect(firstRequests('#task=%E0%A4%A')).toHaveLength(2);
  });

  test('encode the id of the address as the route table does', () => {
    const odd = 'a/b?c';
    expect(
      firstRequests(`#task=${encodeURIComponent(odd)}`)
        .slice(2)
        .map((r) => r.path),
    ).toEqual([`/api/tasks/${encodeURIComponent(odd)}/change`, `/api/tasks/${encodeURIComponent(odd)}`]);
  });

  test('an early answer is taken once, and only while fresh', () => {
    const request = firstRequests('')[0]!;
    const answer = Promise.resolve(new Response('{}'));
    const answers: EarlyAnswers = new Map([[requestKey(request), { at: 1000, answer }]]);
    expect(takeEarly(answers, request, 1000 + EARLY_FRESH_MS)).toBe(answer);
    expect(takeEarly(answers, request, 1000)).toBeUndefined();
    answers.set(requestKey(request), { at: 1000, answer });
    expect(takeEarly(answers, request, 1001 + EARLY_FRESH_MS)).toBeUndefined();
    expect(answers.size).toBe(0);
    expect(takeEarly(undefined, request)).toBeUndefined();
  });

  test('send the token in its header, and a body as JSON', () => {
    const [page] = firstRequests('');
    const init = requestInit(page!, 'tok');
    expect(init).toMatchObject({ method: 'POST', cache: 'no-store', body: JSON.stringify(FIRST_PAGES[0]) });
    expect(init.headers).toEqual({ [TOKEN_HEADER]: 'tok', Accept: 'application/json', 'Content-Type': 'application/json' });
    expect(requestInit({ verb: 'GET', path: '/api/x' }, 'tok')).not.toHaveProperty('body');
  });
});

describe('the HTTP bridge with early answers', () => {
  test('takes the early answer to a request in place of fetching it, and fetches the rest', async () => {
    const fetched: string[] = [];
    const fakeFetch = (async (url: string) => {
      fetched.push(url);
      return new Response(JSON.stringify({ task: { id: 'fetched' }, log: [] }), { status: 200 });
    }) as unknown as typeof fetch;
    const answers: EarlyAnswers = new Map();
    const change = bridgeRequest('taskChange', ID);
    answers.set(requestKey(change), { at: Date.now(), answer: Promise.resolve(new Response(JSON.stringify({ diff: 'early' }))) });
    const bridge = createHttpBridge({ origin: 'http://127.0.0.1:1', token: 't', fetch: fakeFetch, early: (r) => takeEarly(answers, r) });
    expect(await bridge.taskChange(ID)).toEqual({ diff: 'early' });
    expect(fetched).toEqual([]);
    // Taken once: the same call again goes to the server.
    await bridge.taskChange(ID);
    expect(fetched).toEqual([`http://127.0.0.1:1/api/tasks/${ID}/change`]);
  });

  test('an early answer that failed fails the call as a fetch would', async () => {
    const failed = Promise.reject(new TypeError('Failed to fetch'));
    failed.catch(() => {});
    const bridge = createHttpBridge({
      origin: 'http://127.0.0.1:1',
      token: 't',
      fetch: (() => Promise.reject(new Error('not this'))) as unknown as typeof fetch,
      early: () => failed,
    });
    await expect(bridge.getTask(ID)).rejects.toThrow('The Backchannel server is not reachable (Failed to fetch)');
  });
});
