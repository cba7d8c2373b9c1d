/**
 * Every command shown in README.md and docs/*.md is run here, so the docs cannot drift from the product.
 *
 * The convention (docs authors: this is the whole contract):
 * - A fenced block whose info string is exactly `sh` is run with bash (`set -e`), block after block in
 *   the order of its file, from a scratch directory that mirrors the repo root (its top-level entries
 *   are symlinks, so `templates/…` and `node_modules` resolve and files a block creates, such as
 *   `backchannel new my-agent`, land in the scratch directory). `backchannel` is on PATH, `npx backchannel`
 *   runs that same bin, and HOME and the XDG directories point into the scratch directory. Each block
 *   must exit 0 within BLOCK_TIMEOUT_MS.
 * - `nc`, `ncat` and `socat` are not on PATH (a fresh machine lacks them): blocks must do without.
 * - A block whose first line is `# in a sub-agent's shell` is run as a sub-agent's script under a real
 *   broker (`backchannel run --no-task-id-arg -- bash -c <block>`), with every CURSOR_* variable set;
 *   the task must succeed.
 * - A block written `sh tested-by=<file>` is not run here (another test runs its commands): <file> must
 *   exist and contain (itself or a local module it imports), for each command line, its program and
 *   subcommand and every long option it uses.
 * - A block written `sh no-test` is reported as skipped (for commands that run for minutes, like the
 *   benchmarks); use it only where no test can run the command.
 * - Output samples are `console` or `text` and are not run.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/core.js';

const BLOCK_TIMEOUT_MS = 30_000;
const SUB_AGENT_SHELL = "# in a sub-agent's shell";

export interface Block {
  file: string;
  line: number;
  info: string;
  body: string;
}

/** The fenced blocks of a Markdown text, with the line their fence opens on. */
export function fencedBlocks(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S.*)?$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    blocks.push({ file, line: start + 1, info: (open[1] ?? '').trim(), body: body.join('\n') });
  }
  return blocks;
}

/** The command lines of a block: continuation lines joined, comments and blank lines dropped. */
export function commandLines(body: string): string[] {
  return body
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter(Boolean);
}

/**
 * What a tested-by file must contain of a command line: its program and subcommand (the leading plain
 * words, `npx` dropped: `backchannel serve`, `npm run`, `curl`) and every long option it uses (`--port`).
 * Arguments (paths, URLs, JSON) are data the test may build differently.
 */
export function commandWords(line: string): string[] {
  const parts = (line.match(/'[^']*'|"(?:[^"\\]|\\.)*"|\S+/g) ?? []).filter((word) => word !== 'npx' && word !== '$');
  const leading: string[] = [];
  for (const part of parts) {
    if (!/^[a-z][\w.-]*$/i.test(part)) break;
    leading.push(part);
  }
  const options = parts.filter((part) => /^--[a-z]/.test(part)).map((part) => part.replace(/=.*$/, ''));
  return [...new Set([...leading, ...options])];
}

/** A test file's text with the text of the local modules it imports (its helpers often build the command line). */
function withLocalImports(file: string): string {
  const text = fs.readFileSync(file, 'utf8');
  const imported = [...text.matchAll(/from '(\.{1,2}\/[^']+)'/g)]
    .map((match) => path.resolve(path.dirname(file), match[1]!.replace(/\.js$/, '.ts')))
    .filter((module) => fs.existsSync(module));
  return [text, ...imported.map((module) => fs.readFileSync(module, 'utf8'))].join('\n');
}

const DOCS = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Programs the docs may mention but not run: a fresh machine has none of them, and npm test installs none. */
const NOT_ON_A_FRESH_MACHINE = ['nc', 'ncat', 'socat'];

/** A scratch copy of the repo root made of symlinks, with `backchannel` (and an `npx` that runs it) on PATH. */
function scratchRoot(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-docs-'));
  for (const entry of fs.readdirSync(ROOT)) {
    if (entry !== '.git') fs.symlinkSync(path.join(ROOT, entry), path.join(dir, entry));
  }
  const bin = path.join(dir, '.docs-bin');
  fs.mkdirSync(bin);
  fs.symlinkSync(path.join(ROOT, 'bin', 'backchannel.js'), path.join(bin, 'backchannel'));
  // `npx backchannel …` and `npx -p <package> backchannel …` in the docs mean this checkout's bin;
  // npm's own start-up (seconds) adds nothing to what is tested.
  const npx = ['#!/usr/bin/env bash', '[ "$1" = -p ] && shift 2', '[ "$1" = backchannel ] && shift && exec backchannel "$@"'];
  const realNpx = process.env.PATH?.split(path.delimiter)
    .map((p) => path.join(p, 'npx'))
    .find((p) => fs.existsSync(p));
  npx.push(`exec ${JSON.stringify(realNpx ?? 'npx')} "$@"`);
  fs.writeFileSync(path.join(bin, 'npx'), npx.join('\n') + '\n', { mode: 0o755 });
  // What a fresh machine lacks (npm test installs none of it) is hidden, so no example can need it.
  for (const tool of NOT_ON_A_FRESH_MACHINE) {
    const refuse = `#!/bin/sh\necho "${tool}: not on a fresh machine (npm test does not install it); the docs must not need it" >&2\nexit 127\n`;
    fs.writeFileSync(path.join(bin, tool), refuse, { mode: 0o755 });
  }
  for (const sub of ['home', 'config', 'state', 'ipc']) fs.mkdirSync(path.join(dir, '.docs-env', sub), { recursive: true, mode: 0o700 });
  return dir;
}

interface Ran {
  code: number | null;
  output: string;
}

function runBlock(dir: string, cwd: string, block: Block): Promise<Ran> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${path.join(dir, '.docs-bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: path.join(dir, '.docs-env', 'home'),
    XDG_CONFIG_HOME: path.join(dir, '.docs-env', 'config'),
    XDG_STATE_HOME: path.join(dir, '.docs-env', 'state'),
    CURSOR_IPC_DIR: path.join(dir, '.docs-env', 'ipc'),
    FORCE_COLOR: '0',
  };
  for (const name of Object.keys(env)) if (name.startsWith('CURSOR_') && name !== 'CURSOR_IPC_DIR') delete env[name];
  const script = `set -e\n${block.body}\necho "__cwd=$PWD"\n`;
  const [command, args] = block.body.startsWith(SUB_AGENT_SHELL)
    ? ['backchannel', ['run', '--no-task-id-arg', '--label', `${block.file}:${block.line}`, '--', 'bash', '-c', script]]
    : ['bash', ['-c', script]];
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n(still running after ${BLOCK_TIMEOUT_MS} ms: killed)`;
      process.kill(-child.pid!, 'SIGKILL');
    }, BLOCK_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the docs convention', () => {
  it('reads fences, their info strings and the command lines in them', () => {
    const blocks = fencedBlocks('x.md', 'a\n```sh\nnpx backchannel new --list   # all\n```\n```sh tested-by=t.ts\nfoo \\\n  --bar\n```\n');
    expect(blocks.map((b) => [b.line, b.info])).toEqual([
      [2, 'sh'],
      [5, 'sh tested-by=t.ts'],
    ]);
    expect(commandLines(blocks[1]!.body)).toEqual(['foo    --bar']);
    expect(commandWords(commandLines(blocks[0]!.body)[0]!)).toEqual(['backchannel', 'new', '--list']);
    expect(commandWords(`npx backchannel serve --port 0 --data-dir /tmp/bc --json='{"a":1}'`)).toEqual([
      'backchannel',
      'serve',
      '--port',
      '--data-dir',
      '--json',
    ]);
  });
});

/**
 * Markdown a user reads outside a project made by `backchannel new`: there a bare `npx backchannel`
 * resolves to the unrelated npm package called `backchannel`, so none of it may say so. The
 * templates' READMEs are copied into such a project, whose package.json depends on
 * `backchannel-agents` and links its bin: there `npx backchannel` is ours.
 */
const READ_OUTSIDE_A_PROJECT = [
  ...DOCS,
  'sdk/python/README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'sdk'))
    .flatMap((sdk) => (fs.existsSync(path.join(ROOT, 'sdk', sdk, 'README.md')) ? [`sdk/${sdk}/README.md`] : [])),
];

describe("commands that resolve to somebody else's package", () => {
  it('no doc read outside a project tells the user to run a bare `npx backchannel`', () => {
    const offending = [...new Set(READ_OUTSIDE_A_PROJECT)].flatMap((file) =>
      fs
        .readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (/(^|[^\w-])npx\s+backchannel\b/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(offending).toEqual([]);
  });

  it('a project made by `backchannel new` depends on backchannel-agents, so its READMEs may say `npx backchannel`', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-npx-'));
    scratch.push(dir);
    const made = spawnSync(
      process.execPath,
      [path.join(ROOT, 'bin', 'backchannel.js'), 'new', path.join(dir, 'p'), '--template', 'basic'],
      {
        encoding: 'utf8',
      },
    );
    expect(made.status, made.stderr).toBe(0);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'p', 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    expect(Object.keys(pkg.dependencies ?? {})).toContain('backchannel-agents');
    expect(fs.realpathSync(path.join(dir, 'p', 'node_modules', '.bin', 'backchannel'))).toBe(
      fs.realpathSync(path.join(ROOT, 'bin', 'backchannel.js')),
    );
  });
});

for (const file of DOCS) {
  const blocks = fencedBlocks(file, fs.readFileSync(path.join(ROOT, file), 'utf8')).filter((b) => /^sh(\s|$)/.test(b.info));
  if (blocks.length === 0) continue;
  describe(file, () => {
    // Blocks of one file share a scratch directory and a working directory (`cd my-agent` in one block
    // is where the next one runs), like a reader following the page.
    let dir: string | undefined;
    let cwd = '';
    for (const block of blocks) {
      const where = `${file}:${block.line}`;
      const testedBy = /^sh tested-by=(\S+)$/.exec(block.info)?.[1];
      if (block.info === 'sh no-test') {
        it.skip(`${where}: ${commandLines(block.body).join('; ')} (skipped: marked sh no-test, it runs for minutes)`, () => {});
        continue;
      }
      if (testedBy) {
        it(`${where} is run by ${testedBy}`, () => {
          const test = path.join(ROOT, testedBy);
          expect(fs.existsSync(test), `${where}: tested-by names ${testedBy}, which does not exist`).toBe(true);
          const source = withLocalImports(test);
          for (const line of commandLines(block.body)) {
            const missing = commandWords(line).filter((word) => !source.includes(word));
            expect(missing, `${where}: ${testedBy} does not contain "${line}"`).toEqual([]);
          }
        });
        continue;
      }
      it(`${where} runs (${commandLines(block.body)[0] ?? 'empty'})`, async () => {
        expect(block.info, `${where}: unknown info string (use sh, sh tested-by=<test file>, sh no-test, console or text)`).toBe('sh');
        if (!dir) {
          dir = scratchRoot();
          scratch.push(dir);
          cwd = dir;
        }
        const ran = await runBlock(dir, cwd, block);
        expect(ran.code, `${where} failed:\n${block.body}\n--- output ---\n${ran.output}`).toBe(0);
        const moved = /__cwd=(.*)\n?$/m.exec(ran.output)?.[1];
        if (moved && !block.body.startsWith(SUB_AGENT_SHELL)) cwd = moved;
      });
    }
  });
}
