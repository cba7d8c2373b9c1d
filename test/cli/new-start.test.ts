/**
 * `npm start` in a freshly scaffolded project runs the template with its sample input; where the
 * outside tool (a model endpoint, the Cursor CLI, Claude Code) is missing, it says so — it never
 * stops at "input needs …".
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

// On Windows these are skipped (reported as skipped): a PATH of symlinks and sh.
import { ROOT, tempDir } from '../helpers/core.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

const CASES = [
  { template: 'llm-agent', says: 'OPENAI_API_KEY is not set' },
  { template: 'cursor-cli', says: 'the Cursor CLI was not found' },
  { template: 'claude-code', says: 'not on PATH' },
];

function npmStart(cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['start', '--silent'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

test.skipIf(process.platform === 'win32')(
  'npm start in the llm-agent, cursor-cli and claude-code scaffolds runs the sample input and names the missing tool',
  async () => {
    const dir = tempDir('bc-start-');
    // Only node and npm on PATH: no `agent`, no `claude`; no model endpoint.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    for (const tool of ['node', 'npm', 'sh']) {
      const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      fs.symlinkSync(found, path.join(bin, tool));
    }
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: bin, CURSOR_IPC_DIR: path.join(dir, 'ipc') };
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'CURSOR_AGENT_BIN', 'CLAUDE_BIN', 'CURSOR_API_KEY', 'ANTHROPIC_API_KEY'])
      delete env[name];
    for (const { template } of CASES) {
      const made = spawnSync(process.execPath, [BIN, 'new', template, '--template', template], { cwd: dir, encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
      expect(JSON.parse(fs.readFileSync(path.join(dir, template, 'sample-input.json'), 'utf8'))).toBeTypeOf('object');
    }
    const runs = await Promise.all(CASES.map(({ template }) => npmStart(path.join(dir, template), env)));
    runs.forEach((run, i) => {
      expect(run.output, CASES[i]!.template).not.toContain('input needs');
      expect(run.output, CASES[i]!.template).toContain(CASES[i]!.says);
      expect(run.code, CASES[i]!.template).not.toBe(0);
    });
  },
);
