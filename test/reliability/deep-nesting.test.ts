/**
 * Fault table, issue 36 X7: a payload nested thousands deep. Every walk of a parsed value recurses
 * (structuredClone, JSON.stringify, validation, rendering): one result nested ~3,000 deep broke every
 * task listing with "Maximum call stack size exceeded", also after a restart. Payload lines, spool
 * files, result files, journal lines and hub request bodies are now refused past MAX_JSON_DEPTH
 * before anything parses them: an agent's deep line fails its task with a protocol error.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { createInMemoryPair } from '../../src/client/index.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../src/protocol/index.js';
import { runTask } from '../helpers/broker.js';
import { fixture, makeBroker, tempDir } from '../helpers/core.js';
import { captureLogger, expectNothingLeft } from '../helpers/reliability.js';

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('nesting depth', () => {
  test('is measured outside strings only, and the limit itself is allowed', () => {
    expect(nestedDeeperThan(deep(MAX_JSON_DEPTH))).toBe(false);
    expect(nestedDeeperThan(deep(MAX_JSON_DEPTH + 1))).toBe(true);
    // Brackets inside strings (escaped quotes included) are text, not nesting.
    expect(nestedDeeperThan(JSON.stringify({ text: `"${deep(5000)}\\"[[[` }))).toBe(false);
    expect(nestedDeeperThan(`{"a":"\\"",${'['.repeat(200)}`)).toBe(true);
  });

  test('agrees with a character-at-a-time scan on strings of every length around the fast path', () => {
    // The reference: what nestedDeeperThan did before it skipped long strings with indexOf.
    const reference = (text: string): boolean => {
      let depth = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === '"') for (i++; i < text.length && text[i] !== '"'; i++) i += text[i] === '\\' ? 1 : 0;
        else if (c === '[' || c === '{') depth++;
        else if (c === ']' || c === '}') depth--;
        if (depth > MAX_JSON_DEPTH) return true;
      }
      return false;
    };
    // Strings ending in every run of backslashes, at every position around the 32-character switch.
    let checked = 0;
    for (let length = 0; length < 80; length++)
      for (let slashes = 0; slashes < 5; slashes++) {
        const inner = 'x'.repeat(length) + '\\'.repeat(slashes);
        const text = `{"s":"${inner}"${'['.repeat(MAX_JSON_DEPTH + 1)}`;
        expect(nestedDeeperThan(text), `${length} + ${slashes} backslashes`).toBe(reference(text));
        checked++;
      }
    expect(checked).toBe(400);
  });

  test.each([
    ['on the socket', 'socket', 3000],
    ['on the socket, 5,000 deep', 'socket', 5000],
    ['on stdout', 'stdout', 3000],
  ])('a result nested deep %s fails its task with a protocol error; listings keep working', async (_title, via, depth) => {
    const { broker, ipcDir } = makeBroker();
    const done = await runTask(broker, { command: fixture('hostile/deep-payload.mjs'), input: { depth, via } });
    expect(done.error?.reason).toBe('protocol');
    expect(done.error?.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    const { client } = createInMemoryPair(broker);
    expect((await client.listTaskPage({})).tasks.map((t) => t.state)).toEqual(['failed']);
    // Nothing of the deep value is kept: no result (the message shows the line's first 100 characters only).
    expect(broker.tasks()[0]!.result).toBeUndefined();
    await broker.onIdle();
    await expectNothingLeft(ipcDir);
  });

  test('a journal already holding a result nested 3,000 deep still lists its other tasks after a restart', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const { broker: first } = makeBroker({ dataDir });
    const kept = first.submit({ command: fixture('quick.mjs'), input: { n: 'kept' } });
    await kept.result;
    await first.close();
    // What an older hub wrote for a deep result: its `ended` record, with the result inline.
    const id = '0190f3c2-7a4b-7c1e-9d2a-000000000001';
    const at = new Date().toISOString();
    const task = {
      ...{ id, label: 'deep', state: 'succeeded', command: 'agent', args: [], cwd: '/', attempt: 1, maxAttempts: 1 },
      ...{ createdAt: at, endedAt: at, counters: { malformed: 0, rejected: 0, ignored: 0 } },
    };
    const record = JSON.stringify({ e: 'ended', id, at, task: { ...task, result: { task_id: id, status: 'success', data: null } } });
    mkdirSync(dataDir, { recursive: true });
    appendFileSync(path.join(dataDir, 'journal.ndjson'), record.replace('"data":null', `"data":${deep(3000)}`) + '\n');

    const logger = captureLogger();
    const { broker } = makeBroker({ dataDir, logger });
    await broker.ready;
    const { client } = createInMemoryPair(broker);
    expect((await client.listTaskPage({})).tasks.map((t) => t.id)).toEqual([kept.id]);
    expect(logger.at('warn').join('\n')).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });
});
