/**
 * The llm-agent's tools. Every path is confined to the workspace (the task's working directory):
 * `..`, absolute paths and symlinks that lead outside are refused. Writes exist only when the owner
 * gave a write directory, and land only inside it. Commands run without a shell (execFile), only
 * from an allowlist, with a timeout, and without the task's secrets in their environment; their
 * arguments pass the same shell-syntax and path checks whether they come as one line or an array.
 * This is a guard rail for a cooperative model, not a sandbox: run untrusted prompts in a
 * container or VM.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * Read-only programs that cannot start other programs on their own, nor write a file (so no `sort`
 * with its `-o`, `uniq` with its output argument, `date -s`, `file -C`). Extend per task with care.
 */
export const DEFAULT_COMMANDS = ['ls', 'cat', 'head', 'tail', 'wc', 'grep', 'diff', 'echo', 'pwd', 'du'];
/** read_file returns at most this much text (the model only needs the start of a large file). */
const READ_LIMIT_CHARS = 20_000;
const WRITE_LIMIT_BYTES = 1024 * 1024;
const LIST_LIMIT = 200;
const COMMAND_TIMEOUT_MS = 20_000;
const COMMAND_OUTPUT_LIMIT = 256 * 1024;
/** Characters that mean "the model wanted a shell": refused instead of silently passed as text. */
const SHELL_SYNTAX = /[|;&<>`$(){}]|\*\*/;

/** A failure the model should see and recover from (bad arguments, refused path, command failed). */
export class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolError';
  }
}

function isInside(root, target) {
  const relative = path.relative(root, target);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * The real path of `p` under `root`, or a ToolError. Resolves symlinks of the deepest part that
 * exists, so a link inside the workspace pointing outside it is refused too.
 */
export function confine(root, p) {
  if (typeof p !== 'string' || p.trim() === '') throw new ToolError('"path" must be a non-empty string (relative to the workspace)');
  if (p.includes('\0')) throw new ToolError('"path" contains a NUL byte');
  const target = path.resolve(root, p);
  if (!isInside(root, target)) throw new ToolError(`refused: ${JSON.stringify(p)} is outside the workspace`);
  let existing = target;
  const missing = [];
  for (;;) {
    try {
      lstatSync(existing);
      break;
    } catch {
      missing.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
  let real;
  try {
    real = path.join(realpathSync(existing), ...missing);
  } catch {
    throw new ToolError(`refused: ${JSON.stringify(p)} is a broken link`);
  }
  if (!isInside(root, real)) throw new ToolError(`refused: ${JSON.stringify(p)} leads outside the workspace (through a symlink)`);
  return real;
}

function requireString(args, name, { optional = false } = {}) {
  const value = args?.[name];
  if (value === undefined && optional) return undefined;
  if (typeof value !== 'string') throw new ToolError(`"${name}" must be a string`);
  return value;
}

/** Splits `ls -la "my dir"` into words; refuses pipes, redirects, substitutions and globs-of-globs. */
export function splitCommand(line) {
  if (SHELL_SYNTAX.test(line))
    throw new ToolError('no shell here: pipes, redirects, `;`, `&&` and `$()` are not supported; run one program');
  const words = [];
  for (const match of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]);
  return words;
}

/** Environment for tool commands: no hand-off variables, no API keys. */
function commandEnv() {
  const env = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^CURSOR_(TASK|IPC|HEARTBEAT|SPOOL)/.test(name) || /(KEY|TOKEN|SECRET|PASSWORD)$/i.test(name)) continue;
    env[name] = value;
  }
  return env;
}

/**
 * @param {{root: string, writeDir?: string, commands?: string[],
 *   ask?: (question: string, choices?: string[]) => Promise<string>, signal?: AbortSignal}} options
 * @returns {Record<string, {description: string, parameters: string, run: (args: object) => Promise<unknown>}>}
 */
export function createTools(options) {
  const root = realpathSync(options.root);
  const commands = new Set(options.commands ?? DEFAULT_COMMANDS);
  const tools = {
    read_file: {
      description: 'Read a text file in the workspace.',
      parameters: '{"path": "relative/path"}',
      async run(args) {
        const file = confine(root, requireString(args, 'path'));
        let text;
        try {
          text = await fs.readFile(file, 'utf8');
        } catch (error) {
          throw new ToolError(
            error.code === 'ENOENT'
              ? `no such file: ${args.path}`
              : error.code === 'EISDIR'
                ? `${args.path} is a directory: use list_dir`
                : error.message,
          );
        }
        return text.length > READ_LIMIT_CHARS
          ? `${text.slice(0, READ_LIMIT_CHARS)}\n… (${text.length - READ_LIMIT_CHARS} more characters)`
          : text;
      },
    },
    list_dir: {
      description: 'List a directory in the workspace (names ending in / are directories).',
      parameters: '{"path": "relative/dir (default .)"}',
      async run(args) {
        const dir = confine(root, requireString(args, 'path', { optional: true }) ?? '.');
        let entries;
        try {
          entries = await fs.readdir(dir, { withFileTypes: true });
        } catch (error) {
          throw new ToolError(error.code === 'ENOENT' ? `no such directory: ${args?.path}` : error.message);
        }
        const names = entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name)).sort();
        return names.length > LIST_LIMIT ? [...names.slice(0, LIST_LIMIT), `… and ${names.length - LIST_LIMIT} more`] : names;
      },
    },
    shell_command: {
      description: `Run one program without a shell. Allowed programs: ${[...commands].join(', ')}.`,
      parameters: '{"command": "program", "args": ["arg", …]}  (or "command": "program arg …")',
      async run(args) {
        const command = requireString(args, 'command').trim();
        let argv;
        if (args.args !== undefined) {
          if (!Array.isArray(args.args) || !args.args.every((a) => typeof a === 'string'))
            throw new ToolError('"args" must be an array of strings');
          // The same refusal as a line: an array is not a way around it.
          for (const word of [command, ...args.args]) if (SHELL_SYNTAX.test(word)) splitCommand(word);
          argv = [command, ...args.args];
        } else {
          argv = splitCommand(command);
        }
        const [program, ...rest] = argv;
        if (!program || !commands.has(program)) {
          throw new ToolError(`command ${JSON.stringify(program ?? '')} is not allowed; allowed: ${[...commands].join(', ')}`);
        }
        // Arguments that look like paths must stay in the workspace too: `x`, `--opt=x` and `-ox`.
        for (const arg of rest) {
          if (arg.includes('\0')) throw new ToolError('arguments must not contain NUL bytes');
          const values = [arg];
          if (arg.startsWith('-') && arg.includes('=')) values.push(arg.slice(arg.indexOf('=') + 1));
          if (/^-[^-]/.test(arg)) values.push(arg.slice(2));
          for (const value of values)
            if (path.isAbsolute(value) || value.split(/[\\/]/).includes('..') || value.startsWith('~'))
              confine(root, value.replace(/^~/, '/'));
        }
        return new Promise((resolve, reject) => {
          const child = execFile(
            program,
            rest,
            {
              cwd: root,
              env: commandEnv(),
              timeout: COMMAND_TIMEOUT_MS,
              maxBuffer: COMMAND_OUTPUT_LIMIT,
              signal: options.signal,
              windowsHide: true,
            },
            (error, stdout, stderr) => {
              if (error && error.name === 'AbortError') return reject(error);
              if (error && error.code === 'ENOENT') return reject(new ToolError(`${program} is not installed`));
              if (error && error.killed) return reject(new ToolError(`${program} timed out after ${COMMAND_TIMEOUT_MS / 1000} s`));
              resolve({ exit_code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
            },
          );
          // No input: `cat` or `grep` without a file must see EOF, not wait for the timeout.
          child.stdin?.end();
        });
      },
    },
  };
  if (options.writeDir !== undefined) {
    const writeRoot = realpathSync(options.writeDir);
    const where = path.relative(root, writeRoot) || '.';
    tools.write_file = {
      description: `Create or overwrite a text file under ${where} in the workspace (parent directories are created).`,
      parameters: '{"path": "relative/path", "content": "the whole new text"}',
      async run(args) {
        const file = confine(root, requireString(args, 'path'));
        if (!isInside(writeRoot, file)) throw new ToolError(`refused: writes go only under ${where}`);
        const content = requireString(args, 'content');
        if (Buffer.byteLength(content) > WRITE_LIMIT_BYTES) throw new ToolError(`content is larger than ${WRITE_LIMIT_BYTES} bytes`);
        await fs.mkdir(path.dirname(file), { recursive: true });
        // Re-check after mkdir: a parent might have been swapped for a link meanwhile.
        if (!isInside(writeRoot, confine(root, path.relative(root, file)))) throw new ToolError(`refused: writes go only under ${where}`);
        await fs.writeFile(file, content, 'utf8');
        return `wrote ${Buffer.byteLength(content)} bytes to ${path.relative(root, file)}`;
      },
    };
  }
  if (options.ask) {
    const ask = options.ask;
    tools.ask_user = {
      description: 'Ask the person who started the task a question (only when the request is ambiguous).',
      parameters: '{"question": "…", "choices": ["optional", "answers"]}',
      async run(args) {
        const question = requireString(args, 'question');
        const choices = args.choices;
        if (choices !== undefined && !(Array.isArray(choices) && choices.every((c) => typeof c === 'string'))) {
          throw new ToolError('"choices" must be an array of strings');
        }
        try {
          return { answer: await ask(question, choices) };
        } catch (error) {
          if (error?.name === 'AbortError') throw error;
          throw new ToolError(`nobody answered (${error.message}); decide yourself or give your best answer`);
        }
      },
    };
  }
  return tools;
}
