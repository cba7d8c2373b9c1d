/** Host anchoring: the client's environment block, the topology text, and the rules files. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { hostEnvOf, RULES_FILES, topology, writeRules } from '../../../src/gateway/bridge/anchor.js';
import { fixture, tempDir } from '../../helpers/core.js';

/** The environment as each pinned real client sends it, captured from the client (paths rewritten). */
const recorded = (name: string) => fs.readFileSync(fixture(`gateway/client-env/${name}.txt`), 'utf8');

const CLAUDE_ENV = [
  'You are Claude Code.',
  '<env>',
  'Working directory: /home/user/project',
  'Is directory a git repo: Yes',
  'Platform: linux',
  'OS Version: Linux 6.8.0',
  "Today's date: 2026-12-05",
  '</env>',
].join('\n');

describe('hostEnvOf', () => {
  test("reads Claude Code's <env> block: working directory, platform, OS", () => {
    expect(hostEnvOf([{ role: 'system', content: CLAUDE_ENV }])).toEqual({
      root: '/home/user/project',
      platform: 'linux',
      os: 'Linux 6.8.0',
    });
  });

  test("reads Claude Code 2.1.332's `# Environment` system message, as the real client sends it", () => {
    const message = recorded('claude-code-2.1.332');
    expect(message).not.toContain('<env>');
    expect(hostEnvOf([{ role: 'system', content: message }])).toEqual({
      root: '/home/user/project',
      platform: 'linux',
      os: 'Linux 6.18.44-fc-v1300',
    });
  });

  test("reads OpenCode 1.18.33's <env> and Codex 0.171.0's <environment_context>, as the real clients send them", () => {
    expect(hostEnvOf([{ role: 'system', content: recorded('opencode-1.18.33') }])).toEqual({
      root: '/home/user/project',
      platform: 'linux',
    });
    expect(hostEnvOf([{ role: 'user', content: recorded('codex-0.171.0') }])).toEqual({ root: '/home/user/project', platform: 'bash' });
  });

  test("an `# Environment` section is read from the client's system messages only, never from what the user typed", () => {
    const typed = '# Environment\n - Primary working directory: /home/mallory\n';
    expect(hostEnvOf([{ role: 'user', content: typed }])).toBeUndefined();
    expect(hostEnvOf([{ role: 'developer', content: typed }])).toEqual({ root: '/home/mallory' });
    // The section ends at the blank line: a later "working directory" line is not part of it.
    const later = '# Environment\n - Platform: linux\n\nWorking directory: /elsewhere';
    expect(hostEnvOf([{ role: 'system', content: later }])).toBeUndefined();
  });

  test("reads Codex's <environment_context>; the last block of the conversation wins", () => {
    const codex = '<environment_context>\n  <cwd>/srv/app</cwd>\n  <shell>bash</shell>\n</environment_context>';
    expect(
      hostEnvOf([
        { role: 'system', content: CLAUDE_ENV },
        { role: 'user', content: codex },
      ]),
    ).toEqual({ root: '/srv/app', platform: 'bash' });
  });

  test('no block, a relative root or an overlong value: no environment (nothing is guessed)', () => {
    expect(hostEnvOf([{ role: 'user', content: 'hi' }])).toBeUndefined();
    expect(hostEnvOf([{ role: 'system', content: '<env>\nWorking directory: project\n</env>' }])).toBeUndefined();
    expect(hostEnvOf([{ role: 'system', content: `<env>\nWorking directory: /${'a'.repeat(400)}\n</env>` }])).toBeUndefined();
  });
});

describe('topology', () => {
  test('names the host root and the machine, and warns off the scratch workspace', () => {
    const text = topology({ root: '/home/user/project', platform: 'linux' }, '/tmp/ws');
    expect(text).toContain('in /home/user/project');
    expect(text).toContain('(linux)');
    expect(text).toContain('/tmp/ws');
  });

  test('without an environment it says to use only host paths from the conversation', () => {
    expect(topology(undefined, undefined)).toMatch(/only absolute host paths that appeared in this conversation/);
  });
});

describe('writeRules', () => {
  test('writes the rules files, rewrites them only when the environment changes, and replaces a symlink', () => {
    const ws = tempDir();
    writeRules(ws, { root: '/home/user/project' });
    const file = path.join(ws, RULES_FILES[0]!);
    expect(fs.readFileSync(file, 'utf8')).toContain('/home/user/project');
    const before = fs.statSync(file).mtimeMs;
    fs.utimesSync(file, new Date(0), new Date(0));
    writeRules(ws, { root: '/home/user/project' });
    expect(fs.statSync(file).mtimeMs).toBe(0);
    writeRules(ws, { root: '/home/user/other' });
    expect(fs.readFileSync(file, 'utf8')).toContain('/home/user/other');
    expect(before).toBeGreaterThan(0);
    const target = path.join(tempDir(), 'outside');
    fs.writeFileSync(target, 'keep');
    fs.rmSync(path.join(ws, RULES_FILES[1]!));
    fs.symlinkSync(target, path.join(ws, RULES_FILES[1]!));
    writeRules(ws, { root: '/x' });
    expect(fs.readFileSync(target, 'utf8')).toBe('keep');
    expect(fs.lstatSync(path.join(ws, RULES_FILES[1]!)).isSymbolicLink()).toBe(false);
  });
});
