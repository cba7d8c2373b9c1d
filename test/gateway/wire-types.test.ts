/**
 * The gateway's OpenAI objects and stream events, every kind, against the `openai` SDK's own
 * TypeScript types (a dev dependency): a missing required field, a wrong type or a field the SDK does
 * not know fails, and so does `output_text` on the wire (the SDK computes it client-side). The
 * Anthropic side needs `@anthropic-ai/sdk`, which only the real-client suite installs:
 * test/clients/sdks.clients.ts checks it there (and both with the Python SDKs' models).
 */
import path from 'node:path';
import { expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';
import { typeErrors, withoutFields } from '../helpers/sdk-types.js';
import { standinModels, startTestGateway } from './helpers.js';
import { NODE_SDK_FILES, NODE_SDK_TYPES, wireSamples } from './wire.js';

/** Fields the newest Python `openai` requires that the pinned Node `openai` does not know yet. */
const NEWER_THAN_OPENAI_NODE = { input_tokens_details: ['cache_write_tokens'] };

/**
 * A value as the SDK's types describe it: a `response` (alone or in an event) with `output_text`,
 * which the API never sends and the SDK's `Response` type declares because the SDK adds it itself.
 */
function withSdkOnlyFields(value: unknown): unknown {
  const object = value as Record<string, unknown>;
  if (object.object === 'response') return { ...object, output_text: '' };
  return object.response && typeof object.response === 'object' ? { ...object, response: withSdkOnlyFields(object.response) } : value;
}

test("every OpenAI object and stream event the gateway sends fits the openai SDK's types", async () => {
  const dir = tempDir('bc-wire-');
  const gw = await startTestGateway({ models: standinModels(dir), api_key: 'k-wire' }, { dir });
  const samples = (await wireSamples(gw.baseURL, 'k-wire')).filter((s) => NODE_SDK_TYPES[s.kind].sdk === 'openai');
  expect(new Set(samples.map((s) => s.kind))).toEqual(
    new Set(['chat.completion', 'chat.completion.chunk', 'response', 'response.event', 'model']),
  );
  // The API's own fields only: the SDK-only `output_text` is not on the wire, in any object or event.
  expect(samples.filter((s) => JSON.stringify(s.value).includes('"output_text":')).map((s) => s.label)).toEqual([]);
  const openai = path.join(ROOT, 'node_modules/openai');
  const imports = Object.fromEntries(['Chat', 'Responses', 'Models'].map((ns) => [ns, path.join(openai, NODE_SDK_FILES[ns]!)]));
  const values = samples.map((s) => ({
    type: `${NODE_SDK_TYPES[s.kind].namespace}.${NODE_SDK_TYPES[s.kind].type}`,
    value: withSdkOnlyFields(withoutFields(s.value, NEWER_THAN_OPENAI_NODE)),
    label: s.label,
  }));
  // The check can fail: a `response` without `tools` (the gateway's old shape) is refused.
  const { tools: _tools, ...toolless } = values.find((v) => v.type === 'Responses.Response')!.value as Record<string, unknown>;
  values.push({ type: 'Responses.Response', value: toolless, label: 'control: no tools' });
  const errors = typeErrors(imports, values);
  expect(errors).toEqual([expect.stringMatching(/^control: no tools: .*'tools'/)]);
}, 180_000); // the compiler reads the SDK's declarations: tens of seconds on a busy machine
