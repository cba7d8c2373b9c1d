/**
 * Bridge mode through the official Python SDKs (`openai`, `anthropic`, pinned, pip into a venv):
 * all three APIs, streamed and not, against the stand-in agent's `bridge` mode — the tool call comes
 * back in each SDK's own types, the result continues the run to its answer (a parallel pair on Chat
 * Completions, thinking on Messages). The Node SDKs do the same in test/gateway/bridge.test.ts.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';
import { ensurePythonClients, runCli } from '../helpers/real-clients.js';
import { standinModels, startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const python = ensurePythonClients([PINS.pythonOpenai, PINS.pythonAnthropic]);
const title = `bridge mode, python ${PINS.pythonOpenai.join('==')} ${PINS.pythonAnthropic.join('==')}`;

describe.skipIf('skip' in python)(`${title}${'skip' in python ? ` (skipped: ${python.skip})` : ''}`, () => {
  test('each API, streamed and not: the tool call, its result, the same run to the answer', async () => {
    const dir = tempDir('bc-bridge-py-');
    const gw = await startTestGateway({ models: standinModels(dir), api_key: 'k-py' }, { dir });
    const script = path.join(ROOT, 'test/clients/python/bridge_client.py');
    const run = await runCli((python as { python: string }).python, [script, gw.url, 'k-py', 'bridge'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: dir },
    });
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as Record<string, { calls: string[]; text: string; tasks?: number; thinking?: string[] }>;
    const pair = { calls: ['a.txt', 'b.txt'], text: 'done: "contents of a.txt" | "contents of b.txt"' };
    expect(report.chat).toEqual({ ...pair, tasks: 1 });
    expect(report['chat stream']).toMatchObject(pair);
    const one = { calls: ['a.txt'], text: 'done: "contents of a.txt"' };
    expect(report.responses).toEqual(one);
    expect(report['responses stream']).toEqual(one);
    for (const api of ['messages', 'messages stream']) expect(report[api]).toEqual({ ...one, thinking: ['Thinking about it.'] });
  });
});
