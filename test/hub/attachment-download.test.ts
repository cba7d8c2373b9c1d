/**
 * The panel's attachment download: snapshots carry name and size only; the bridge call
 * `attachment(id, name)` returns the bytes (base64) over HTTP, the same route the panel's button uses.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { BackchannelBridge } from '../../src/bridge/contract.js';
import { BridgeError } from '../../src/model/errors.js';
import { createHttpBridge } from '../../src/renderer/http-bridge.js';
import { fixture } from '../helpers/core.js';
import { NodeEventSource, origin, startTestHeadless, waitForTask, type TestHeadless } from '../helpers/panel.js';

let headless: TestHeadless;
let http: BackchannelBridge;

beforeAll(async () => {
  headless = await startTestHeadless();
  http = createHttpBridge({ origin: origin(headless), token: headless.server.token, EventSource: NodeEventSource });
});
afterAll(async () => {
  await headless?.stop();
});

test('a finished task lists its attachments by name and size, and each one downloads whole', async () => {
  const { id } = await http.submit({ command: 'node', args: [fixture('raw-attacher.mjs'), 'whole'], label: 'attacher' });
  const task = await waitForTask(http.subscribe, (t) => t.id === id && t.state === 'succeeded');
  const text = 'héllo wörld 🙂 '.repeat(5000);
  expect(task.result?.attachments).toEqual([
    { name: 'notes.txt', bytes: Buffer.byteLength(text), encoding: 'utf8' },
    { name: 'blob', bytes: 7, encoding: 'binary' },
  ]);
  const notes = await http.attachment(id, 'notes.txt');
  expect(notes).toMatchObject({ name: 'notes.txt', encoding: 'utf8', bytes: Buffer.byteLength(text) });
  expect(Buffer.from(notes.base64, 'base64').toString('utf8')).toBe(text);
  const blob = await http.attachment(id, 'blob');
  expect(Buffer.from(blob.base64, 'base64')).toEqual(Buffer.from([0, 10, 13, 255, 10, 10, 0]));
  const missing = await http.attachment(id, 'nope').catch((error: unknown) => error);
  expect(BridgeError.is(missing) && missing.code).toBe('not_found');
});
