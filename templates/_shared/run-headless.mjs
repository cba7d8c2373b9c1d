/**
 * Runs one headless CLI session for a Backchannel task: spawns the CLI (cli-process.mjs), feeds its
 * stdout through a translator (translate.mjs), reports progress on the task, and turns the end of
 * the run into a returned result or a thrown error. Shared by the cursor-cli and claude-code templates:
 * this is the one copy, which `backchannel new` vendors into a scaffolded project (template.json
 * `vendor`).
 */
import { childEnvironment, startCli } from './cli-process.mjs';
import { describeStep, parseEventLine, stripAnsi } from './stream-json.mjs';

/** An error the SDK turns into an `error` payload; `retryable: false` makes it final. */
export class AgentFailure extends Error {
  constructor(message, { retryable = true, data } = {}) {
    super(message);
    this.name = 'AgentFailure';
    this.retryable = retryable;
    if (data !== undefined) this.data = data;
  }
}

/**
 * What only the owner may choose — the program a template starts, the arguments it adds, how much
 * the CLI may do without asking — comes from the agent's environment (the broker's, the worker's, a
 * gateway model's `env`), never from the task's input, which any door that may start the template
 * sends (an MCP client, a job in a shared Redis). Input naming one fails the task, saying where it goes.
 * @param {Record<string, unknown>} options the task's input
 * @param {Record<string, string>} ownerOnly input field → the environment variable that sets it
 */
export function refuseOwnerOnlyInput(options, ownerOnly) {
  for (const [field, variable] of Object.entries(ownerOnly)) {
    if (options[field] !== undefined) {
      throw new AgentFailure(
        `input "${field}" is not accepted: only the owner sets it, as ${variable} in the environment the agent runs with`,
        { retryable: false },
      );
    }
  }
}

/**
 * Input values that land in the CLI's argv as an option's value (`--resume <id>`, `--model <m>`,
 * `codex exec resume <id>`) must never read as an option themselves: `claude --resume [value]` takes
 * its value optionally and Codex's parser takes `resume --dangerously-bypass-approvals-and-sandbox`
 * as that flag (checked with the real Codex 0.171.0). Each starts with a letter or digit and holds
 * no blank or shell-like character; anything else fails the task, naming the field.
 */
const ARGV_VALUE_SHAPES = {
  resume: { pattern: /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/, what: 'a session id (letters, digits, ".", "_", ":", "-")' },
  model: {
    pattern: /^[A-Za-z0-9][A-Za-z0-9._:/@[\]-]{0,199}$/,
    what: 'a model name (letters, digits, ".", "_", ":", "/", "@", "[", "]", "-")',
  },
};

/**
 * The input's `field` (one of ARGV_VALUE_SHAPES) as a string for argv, or undefined when absent or
 * empty; a value of another shape fails the task.
 * @param {Record<string, unknown>} options the task's input
 * @param {'resume' | 'model'} field
 */
export function argvValueFromInput(options, field) {
  const value = options[field];
  if (value === undefined || value === null || value === '') return undefined;
  const shape = ARGV_VALUE_SHAPES[field];
  if (typeof value !== 'string' || !shape.pattern.test(value)) {
    throw new AgentFailure(`input "${field}" must be ${shape.what}, starting with a letter or digit`, { retryable: false });
  }
  return value;
}

/** A JSON array of strings from the environment variable `name` (undefined or empty: none). */
export function argsFromEnv(name) {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return [];
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (!Array.isArray(value) || !value.every((arg) => typeof arg === 'string')) {
    throw new AgentFailure(`${name} must be a JSON array of strings, e.g. ["--max-turns", "5"]`, { retryable: false });
  }
  return value;
}

/**
 * @param {import('backchannel-agents/agent-runtime').Task} task
 * @param {{
 *   product: string,               // "the Cursor CLI", for messages
 *   bin: string, args: string[], cwd?: string,
 *   translator: {push(event: object): object[], sessionId?: string, openCalls: string[]},
 *   looksLikeAuthFailure: (text: string) => boolean,
 *   loginHint: string, installHint: string,
 *   idleTimeoutMs?: number, killGraceMs?: number,
 *   stdinText?: string,            // the prompt, when too long for argv
 *   env?: Record<string, string>,  // added to the CLI's environment (bridge mode's MCP timeouts)
 *   waiting?: () => boolean,       // the CLI waits on a bridged tool call: its silence is not idleness
 *   ownGroup?: boolean,            // see cli-process.mjs (default true)
 *   settleMs?: number,             // after a final `result`, wait this long for a later one before stopping (default 0)
 *   fatalOutput?: Array<{pattern: RegExp, message: string}>, // stderr/stdout that means "never retry"
 * }} run
 *
 * Translator events besides init/text/tool/status/result: `thinking {text}` (a piece of thinking: a
 * `{thinking}` partial, never the answer), `subagent {text}` (a sub-agent's text:
 * progress, never the answer), `fatal {message, auth}` (stop now, fail without retry). A `result`
 * with `final: false` (background tasks pending) does not end the run; the last result wins.
 * @returns {Promise<{text: string, session_id?: string, tool_calls: number}>}
 */
export async function runHeadless(task, run) {
  const nonJson = [];
  let result;
  let steps = 0;
  let text = '';

  let fatal;
  let settle;
  const cli = startCli({
    bin: run.bin,
    args: run.args,
    cwd: run.cwd,
    env: childEnvironment(run.env),
    idleTimeoutMs: run.idleTimeoutMs,
    waiting: run.waiting,
    killGraceMs: run.killGraceMs,
    stdinText: run.stdinText,
    ownGroup: run.ownGroup,
    onStdoutLine(line) {
      const event = parseEventLine(line);
      if (event === null) {
        const plain = stripAnsi(line).trim();
        if (plain !== '') {
          nonJson.push(plain);
          if (nonJson.length > 20) nonJson.shift();
          process.stderr.write(`[cli] ${plain}\n`); // becomes the task log
        }
        return;
      }
      for (const out of run.translator.push(event)) {
        switch (out.kind) {
          case 'init':
            task.meta({ model_used: out.model, session_id: out.session_id });
            task.partial({ phase: 'init', model: out.model, session_id: out.session_id });
            break;
          case 'text':
            text = out.delta ? text + out.text : out.text;
            task.partial({ text });
            break;
          case 'tool':
            if (out.phase === 'started') steps += 1;
            task.partial({
              // The step in words for the task row ("editing src/x.ts"); the tool's name when it is not known.
              message: describeStep(out.name, out.args) ?? out.name,
              step: steps,
              tool: out.name,
              phase: out.phase,
              call_id: out.call_id,
              args: out.args,
              ok: out.ok,
              result: out.result,
            });
            break;
          case 'thinking':
            // A piece of thinking, never part of the answer (the gateway shows it to clients that ask).
            task.partial({ thinking: out.text });
            break;
          case 'status':
            task.partial({ status: out.message });
            break;
          case 'subagent':
            task.partial({ subagent: { text: out.text, parent: out.parent } });
            break;
          case 'fatal':
            fatal ??= out;
            void cli.stop(out.message);
            break;
          case 'result':
            result = out;
            clearTimeout(settle);
            if (out.final === false) break; // background tasks pending: a later result follows
            // The result is the end of the run, whether or not the CLI exits (it sometimes doesn't).
            if (!run.settleMs) void cli.stop('result received');
            else settle = setTimeout(() => void cli.stop('result received'), run.settleMs);
            break;
        }
      }
    },
  });

  const onAbort = () => void cli.stop('cancelled');
  task.signal.addEventListener('abort', onAbort, { once: true });
  let exit;
  try {
    exit = await cli.done;
  } finally {
    clearTimeout(settle);
    task.signal.removeEventListener('abort', onAbort);
  }

  if (exit.spawnError) {
    if (exit.spawnError.code === 'ENOENT') {
      throw new AgentFailure(`${run.product} was not found: "${run.bin}" is not on PATH. ${run.installHint}`, { retryable: false });
    }
    throw new AgentFailure(`could not start ${run.product} ("${run.bin}"): ${exit.spawnError.message}`, { retryable: false });
  }
  if (fatal !== undefined) {
    throw new AgentFailure(fatal.auth ? `${run.loginHint} (${fatal.message})` : fatal.message, {
      retryable: false,
      data: { session_id: run.translator.sessionId },
    });
  }
  if (result !== undefined) {
    task.meta({ ...result.meta, tool_calls: steps });
    if (result.ok) return { text: result.text, session_id: result.session_id, tool_calls: steps };
    const auth = run.looksLikeAuthFailure(`${result.text}\n${result.error ?? ''}`);
    const message = result.text || result.error || `${run.product} reported an error (${result.subtype ?? 'no details'})`;
    throw new AgentFailure(auth ? `${run.loginHint} (${message})` : message, {
      retryable: !auth,
      data: { session_id: result.session_id, subtype: result.subtype },
    });
  }
  if (task.signal.aborted) throw task.signal.reason ?? new Error('cancelled');

  const tail = [exit.stderrTail, nonJson.join('\n')].filter(Boolean).join('\n');
  if (run.looksLikeAuthFailure(tail)) throw new AgentFailure(`${run.loginHint}\n${tail}`, { retryable: false });
  const known = run.fatalOutput?.find((entry) => entry.pattern.test(tail));
  if (known) throw new AgentFailure(`${known.message}\n${tail}`, { retryable: false });
  const how = exit.stoppedBecause ?? (exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`);
  throw new AgentFailure(`${run.product} ended without a result (${how})${tail ? `:\n${tail}` : ''}`, {
    data: { exit_code: exit.code, session_id: run.translator.sessionId, open_tool_calls: run.translator.openCalls },
  });
}
