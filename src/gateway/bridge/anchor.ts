/**
 * Host anchoring (docs/gateway.md, "Bridge mode"): in bridge mode the client's tools run on the
 * client's machine, in the client's directory, while the agent's own harness tells it that its
 * scratch workspace is the project. This module reads the client's environment block from a request
 * and states the real topology, for the head and the tail of the prompt and for the workspace's
 * rules files.
 *
 * Guarantees:
 * - the environment comes from the client's own block, the last one in the conversation, in each
 *   form the pinned real clients send (test/fixtures/gateway/client-env/): Claude Code 2.1.332's
 *   `# Environment` section of a system message (` - Primary working directory: …`), OpenCode's and
 *   older Claude Codes' `<env>` block, Codex's `<environment_context>`; nothing is guessed: without
 *   a block the agent is told to use only absolute host paths that appeared in the conversation;
 * - the `# Environment` form, a Markdown heading anyone can type, is read only from system and
 *   developer messages (the client's own), never from what the user wrote;
 * - values are one line each, at most {@link MAX_VALUE_CHARS} characters, so a block cannot smuggle
 *   instructions into the rules file;
 * - the rules files are rewritten only when what they say changes.
 */
import fs from 'node:fs';
import path from 'node:path';

/** What anchoring reads of a message (the gateway's `ChatMessage` is one). */
export interface RoleText {
  role: string;
  content: string;
}

/** The client's machine as its environment block describes it. */
export interface HostEnv {
  /** The client's working directory (the project root the tools run in). */
  root?: string;
  platform?: string;
  os?: string;
}

/** Longest value read from an environment block (paths and OS names are short). */
export const MAX_VALUE_CHARS = 300;

/** Files agents load from their working directory as project rules (Claude Code; Codex and Cursor). */
export const RULES_FILES = ['CLAUDE.md', 'AGENTS.md'];

const ENV_BLOCK = /<env>([\s\S]*?)<\/env>/g;
const CONTEXT_BLOCK = /<environment_context>([\s\S]*?)<\/environment_context>/g;
/** Claude Code 2.1.332's section: `# Environment`, then ` - Name: value` lines, up to a blank line or the next heading. */
const MARKDOWN_BLOCK = /^#{1,3} Environment[ \t]*\n([\s\S]*?)(?=\n[ \t]*\n|\n#|$(?![\s\S]))/gm;
/** Roles whose messages are the client's own (its system prompt), not the user's words. */
const CLIENT_ROLES = new Set(['system', 'developer']);

/** `Name: value` lines of an `<env>` block or (as ` - Name: value`) an `# Environment` section. */
const ENV_LINES: Array<[keyof HostEnv, RegExp]> = [
  ['root', /^[ \t]*(?:[-*][ \t]+)?(?:primary\s+)?working directory:[ \t]*(.+)$/im],
  ['platform', /^[ \t]*(?:[-*][ \t]+)?platform:[ \t]*(.+)$/im],
  ['os', /^[ \t]*(?:[-*][ \t]+)?os version:[ \t]*(.+)$/im],
];

/** `<tag>value</tag>` of Codex's `<environment_context>`. */
const CONTEXT_TAGS: Array<[keyof HostEnv, RegExp]> = [
  ['root', /<cwd>([^<]*)<\/cwd>/i],
  ['platform', /<shell>([^<]*)<\/shell>/i],
];

const clean = (value: string | undefined) => {
  const line = value?.trim().split('\n')[0]?.trim();
  return line && line.length <= MAX_VALUE_CHARS ? line : undefined;
};

function fromBlock(block: string, fields: Array<[keyof HostEnv, RegExp]>): HostEnv {
  const env: HostEnv = {};
  for (const [key, pattern] of fields) {
    const value = clean(pattern.exec(block)?.[1]);
    if (value !== undefined) env[key] = value;
  }
  return env;
}

/** The last environment block of the conversation, or undefined when it has none (or no root). */
export function hostEnvOf(messages: readonly RoleText[]): HostEnv | undefined {
  let found: HostEnv | undefined;
  for (const message of messages) {
    if (CLIENT_ROLES.has(message.role))
      for (const match of message.content.matchAll(MARKDOWN_BLOCK)) found = fromBlock(match[1] ?? '', ENV_LINES);
    for (const match of message.content.matchAll(ENV_BLOCK)) found = fromBlock(match[1] ?? '', ENV_LINES);
    for (const match of message.content.matchAll(CONTEXT_BLOCK)) found = fromBlock(match[1] ?? '', CONTEXT_TAGS);
  }
  return found?.root !== undefined && path.isAbsolute(found.root) ? found : undefined;
}

/** The topology in a few sentences: where the tools run, and that the scratch workspace is not it. */
export function topology(env: HostEnv | undefined, workspace: string | undefined): string {
  const scratch = workspace
    ? ` Your own working directory (${workspace}) is a scratch directory the client cannot see: never name it in a tool call.`
    : '';
  if (!env?.root)
    return (
      "Tools are the client's: they run on the client's machine, not where you are." +
      scratch +
      ' Use only absolute host paths that appeared in this conversation.'
    );
  const machine = [env.platform, env.os].filter((v) => v !== undefined).join(', ');
  return (
    `Tools are the client's: they run on the client's machine${machine ? ` (${machine})` : ''}, in ${env.root}.` +
    scratch +
    ` Files and commands are in ${env.root}: use paths there.`
  );
}

/** The rules file's text. */
export function rulesText(env: HostEnv | undefined, workspace: string | undefined): string {
  return `# Where the tools run\n\n${topology(env, workspace)}\n`;
}

/**
 * Writes the rules files into `workspace` (a scratch directory the gateway made for the session),
 * only when their text changes; never through a symlink.
 */
export function writeRules(workspace: string, env: HostEnv | undefined): void {
  const text = rulesText(env, workspace);
  for (const name of RULES_FILES) {
    const file = path.join(workspace, name);
    let current: string | undefined;
    try {
      if (fs.lstatSync(file).isSymbolicLink()) fs.unlinkSync(file);
      else current = fs.readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== text) fs.writeFileSync(file, text, { mode: 0o600 });
  }
}
