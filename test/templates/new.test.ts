/**
 * `backchannel new`, as a user runs it (the built CLI in a real process): listing, refusals, and for
 * every template: scaffold, then run the result with `backchannel run` and with its own `npm test`.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listTemplates } from '../../src/templates/catalog.js';
import { act, answer, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cli = path.join(root, 'bin/backchannel.js');
const standins = path.join(root, 'test/fixtures/standins/bin');
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function backchannel(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      timeout: 100_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let scratch: string;
beforeAll(() => {
  if (!fs.existsSync(path.join(root, 'dist/cli/commands/new.js'))) throw new Error('build first: npm run build');
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-new-'));
});
afterAll(() => {
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('backchannel new', () => {
  it('lists every template with its description', async () => {
    const out = await backchannel(['new', '--list']);
    expect(out.code).toBe(0);
    for (const name of ['basic', 'raw-node', 'python', 'llm-agent', 'cursor-cli', 'claude-code'])
      expect(out.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
  });

  it('prints its help', async () => {
    const out = await backchannel(['new', '--help']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/Usage: backchannel new <dir> --template <name>/);
  });

  it('refuses a non-empty directory and writes nothing', async () => {
    const dir = path.join(scratch, 'occupied');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'mine.txt'), 'keep me');
    const out = await backchannel(['new', dir, '--template', 'python']);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/is not empty/);
    expect(fs.readdirSync(dir)).toEqual(['mine.txt']);
  });

  it('fills an existing empty directory', async () => {
    const dir = path.join(scratch, 'empty');
    fs.mkdirSync(dir);
    expect((await backchannel(['new', dir, '-t', 'raw-node'])).code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'agent.mjs'))).toBe(true);
  });

  it('explains usage errors: no directory, no template, an unknown template', async () => {
    expect(await backchannel(['new', '--template', 'python'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/missing <dir>/) });
    expect(await backchannel(['new', path.join(scratch, 'x')])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/missing --template[\s\S]*python/),
    });
    expect(await backchannel(['new', path.join(scratch, 'y'), '--template', 'nope'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/unknown template "nope"/),
    });
    expect(fs.existsSync(path.join(scratch, 'x'))).toBe(false);
  });

  it('writes a package.json pointing at the installation it came from, unless --no-link', async () => {
    const linked = path.join(scratch, 'linked');
    await backchannel(['new', linked, '-t', 'python']);
    const pkg = JSON.parse(fs.readFileSync(path.join(linked, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect(pkg.dependencies['backchannel-agents']).toBe(`file:${root}`);
    expect(pkg.scripts).toEqual({
      start: 'backchannel run --input @sample-input.json -- python3 agent.py',
      check: `backchannel check --input '{"path":".","extensions":[".py",".md"]}' -- python3 agent.py`,
      test: 'npm run check && node --test test/',
    });
    expect(fs.realpathSync(path.join(linked, 'node_modules/backchannel-agents'))).toBe(fs.realpathSync(root));

    const unlinked = path.join(scratch, 'unlinked');
    const out = await backchannel(['new', unlinked, '-t', 'python', '--no-link']);
    expect(out.stdout).toMatch(/npm install/);
    expect(fs.existsSync(path.join(unlinked, 'node_modules'))).toBe(false);
    expect(JSON.parse(fs.readFileSync(path.join(unlinked, 'package.json'), 'utf8')).dependencies['backchannel-agents']).toMatch(/^\^\d/);
  });
});

describe.each(listTemplates(path.join(root, 'templates')).map((t) => t.name))('a project scaffolded from the %s template', (name) => {
  let dir: string;
  let fake: FakeOpenAI | undefined;
  beforeAll(async () => {
    dir = path.join(scratch, `from-${name}`);
    const out = await backchannel(['new', dir, '--template', name]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`Created .* from the ${name} template[\\s\\S]*npx backchannel run`));
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('has the agent, a README, a test and no build debris', () => {
    const files = fs.readdirSync(dir);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'package.json', 'template.json', 'test', '.gitignore']));
    expect(fs.readdirSync(path.join(dir, 'test'))).toContain('agent.test.mjs');
    expect(files).not.toContain('__pycache__');
  });

  it('carries its vendored files, and its imports point at them instead of the package', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'template.json'), 'utf8')) as { vendor?: { from: string; to: string }[] };
    for (const entry of manifest.vendor ?? []) {
      const source = path.join(root, entry.from);
      const files = fs.statSync(source).isDirectory()
        ? (fs.readdirSync(source, { recursive: true }) as string[]).filter(
            (f) => !f.includes('__pycache__') && fs.statSync(path.join(source, f)).isFile(),
          )
        : [''];
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        expect(fs.readFileSync(path.join(dir, entry.to, file), 'utf8'), file).toBe(fs.readFileSync(path.join(source, file), 'utf8'));
      }
    }
    for (const file of fs.readdirSync(dir).filter((f) => /\.(mjs|js|ts|py)$/.test(f))) {
      expect(fs.readFileSync(path.join(dir, file), 'utf8'), file).not.toMatch(/['"]\.\.\//);
    }
  });

  it('runs with `backchannel run` straight away', async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'template.json'), 'utf8')) as { run: string[]; input?: unknown };
    const env: NodeJS.ProcessEnv = { ...process.env };
    let input = manifest.input;
    if (name === 'cursor-cli') env.CURSOR_AGENT_BIN = path.join(standins, 'agent');
    if (name === 'claude-code') env.CLAUDE_BIN = path.join(standins, 'claude');
    if (name === 'codex') env.CODEX_BIN = path.join(standins, 'codex');
    if (name === 'llm-agent') {
      fake = await startFakeOpenAI([{ content: act('list_dir', {}) }, { content: answer('looked') }]);
      Object.assign(env, { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test-key', OPENAI_MODEL: 'fake-model' });
      input = { task: 'Look around' };
    }
    const out = await backchannel(
      ['run', '--json', '--timeout', '60000', '--input', JSON.stringify(input ?? null), '--', ...manifest.run],
      { cwd: dir, env },
    );
    expect(out.code, out.stderr).toBe(0);
    const payload = JSON.parse(out.stdout.trim().split('\n').at(-1)!) as { status: string; data: unknown };
    expect(payload.status).toBe('success');
  }, 120_000);

  it('passes its own test (npm test), which runs it under the broker', async () => {
    const { stdout } = await run(process.execPath, ['--test', 'test/'], { cwd: dir, timeout: 100_000 });
    expect(stdout).toMatch(/# pass 1/);
    expect(stdout).toMatch(/# fail 0/);
  }, 120_000);
});
