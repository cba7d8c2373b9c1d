/**
 * Red-team X1, fixed once for every template: nothing in a task's input chooses the program a shipped
 * template runs, nor adds to its argv. Every template in templates/ runs under the real broker with
 * stand-in CLIs on PATH (`claude`, `codex`, `agent`, `cursor-agent`) that record their argv, once
 * with its own example input and once per hostile field (`bin`, `extra_args`, flag-like `resume` and
 * `model`). Each hostile run either runs exactly what the plain run ran, or runs nothing and fails
 * naming the field; the program named by `bin` never runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listTemplates } from '../../src/templates/catalog.js';
import { presetOf } from '../../src/templates/presets.js';
import { runTask, startBroker, type Finished, type TestBroker } from '../helpers/broker.js';

const CLI_NAMES = ['claude', 'codex', 'agent', 'cursor-agent'];
/** Flags that would lift each CLI's sandbox or permission checks if they reached its argv as flags. */
const BYPASS = '--dangerously-bypass-approvals-and-sandbox';

const HOSTILE: Record<string, Record<string, unknown>> = {
  bin: { bin: '<evil>' },
  extra_args: { extra_args: [BYPASS, '--dangerously-skip-permissions', '--force'] },
  'flag-like resume': { resume: BYPASS },
  'flag-like resume (short)': { resume: '-c' },
  'resume with a value': { resume: '--resume=x --dangerously-skip-permissions' },
  'flag-like model': { model: '--dangerously-skip-permissions' },
};

let tb: TestBroker;
let dir: string;
let stand: string;
let evil: string;
beforeAll(async () => {
  tb = await startBroker();
  dir = fs.mkdtempSync(path.join(tb.dir, 'owner-only-'));
  stand = path.join(dir, 'bin');
  fs.mkdirSync(stand);
  // Each stand-in appends {program, argv} to $RECORD_FILE and exits 1 (the template then fails: only argv matters here).
  for (const name of CLI_NAMES) {
    const script = `#!/usr/bin/env node
const fs = require('node:fs');
fs.appendFileSync(process.env.RECORD_FILE, JSON.stringify({ program: ${JSON.stringify(name)}, argv: process.argv.slice(2) }) + '\\n');
process.exit(1);
`;
    fs.writeFileSync(path.join(stand, name), script, { mode: 0o755 });
  }
  evil = path.join(dir, 'evil.sh');
  fs.writeFileSync(evil, `#!/bin/sh\necho '{"program":"evil","argv":[]}' >> "$RECORD_FILE"\nexit 1\n`, { mode: 0o755 });
});
afterAll(async () => {
  await tb.close();
});

interface Recorded {
  program: string;
  argv: string[];
}

async function runTemplate(name: string, extra: Record<string, unknown>, label: string): Promise<{ run: Finished; recorded: Recorded[] }> {
  const template = listTemplates().find((t) => t.name === name)!;
  const { request } = presetOf(template);
  const cwd = fs.mkdtempSync(path.join(dir, `${name}-`));
  const record = path.join(cwd, '.record.ndjson');
  const base = typeof template.input === 'object' && template.input !== null ? template.input : {};
  const hostile = Object.fromEntries(Object.entries(extra).map(([key, value]) => [key, value === '<evil>' ? evil : value]));
  const run = await runTask(tb.broker, {
    command: request.command,
    args: request.args,
    cwd: request.cwd ?? cwd,
    input: { ...base, ...hostile },
    env: {
      PATH: `${stand}${path.delimiter}${process.env.PATH ?? ''}`,
      RECORD_FILE: record,
      // No model endpoint: the llm-agent fails before its loop (it runs no CLI either way).
      OPENAI_API_KEY: '',
      OPENAI_BASE_URL: '',
    },
    label: `${name} ${label}`,
    timeoutMs: 60_000,
    retries: 0,
  });
  const recorded = fs.existsSync(record)
    ? fs
        .readFileSync(record, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Recorded)
    : [];
  return { run, recorded };
}

const names = listTemplates().map((t) => t.name);

describe.each(names)('the %s template', (name) => {
  let plain: Recorded[];
  beforeAll(async () => {
    plain = (await runTemplate(name, {}, 'plain')).recorded;
  });

  it.each(Object.keys(HOSTILE))('runs nothing else when the input has %s', async (label) => {
    const { run, recorded } = await runTemplate(name, HOSTILE[label]!, label);
    expect(recorded.map((r) => r.program)).not.toContain('evil');
    if (recorded.length === 0) {
      // Refused before anything ran: the task says which field, and it is not retried.
      if (plain.length > 0) {
        expect(run.error?.message).toMatch(new RegExp(`input "${Object.keys(HOSTILE[label]!)[0]}"`));
      }
    } else {
      expect(recorded).toEqual(plain);
    }
    for (const call of recorded) {
      for (const flag of [BYPASS, '--dangerously-skip-permissions', '--force', '-c']) expect(call.argv).not.toContain(flag);
    }
  });
});

it('covers every shipped template, and the coding ones do run their CLI on plain input', async () => {
  expect(names).toEqual(expect.arrayContaining(['claude-code', 'codex', 'cursor-cli']));
  for (const name of ['claude-code', 'codex', 'cursor-cli']) {
    const { recorded } = await runTemplate(name, {}, 'plain check');
    expect(recorded.map((r) => r.program)).toEqual([name === 'cursor-cli' ? 'agent' : name === 'claude-code' ? 'claude' : 'codex']);
  }
});
