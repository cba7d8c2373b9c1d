/**
 * The think → act → observe loop. The model answers every turn with one JSON object:
 *
 *   {"thought": "…", "action": {"name": "<tool>", "arguments": {…}}}     to use a tool
 *   {"thought": "…", "action": null, "answer": "…"}                      when done
 *
 * Guards: JSON mode plus an explicit instruction, code fences stripped, an unparseable reply fed
 * back with a bounded retry, a step limit, a window over the history, short tool results.
 */

/** Defaults, each with its reason. */
export const LOOP_DEFAULTS = {
  /** Enough for read → think → write → check on a small task; stops a model that loops. */
  maxSteps: 12,
  /** Replies that are not the JSON we asked for, per step, before giving up. */
  maxParseRetries: 2,
  /** Messages kept after the task itself; older turns are dropped (context and cost stay flat). */
  historyWindow: 16,
  /** Tool output the model sees; more rarely helps and quickly fills the context. */
  toolResultChars: 4000,
  /** Tool output shown in progress payloads. */
  partialResultChars: 200,
};

export class LoopError extends Error {
  constructor(message, { retryable = true } = {}) {
    super(message);
    this.name = 'LoopError';
    this.retryable = retryable;
  }
}

function shorten(text, max) {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

function asText(value) {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 1);
}

/** Removes a Markdown code fence around the reply (```json … ```), which models add despite JSON mode. */
export function stripFences(text) {
  const trimmed = text.trim();
  const fenced = /^```[\w-]*\s*\n?([\s\S]*?)\n?```$/.exec(trimmed);
  return (fenced ? fenced[1] : trimmed).trim();
}

/** The first balanced `{…}` in `text` (for replies with prose around the object), or undefined. */
function firstObject(text) {
  const start = text.indexOf('{');
  if (start === -1) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth += 1;
    else if (c === '}' && --depth === 0) return text.slice(start, i + 1);
  }
  return undefined;
}

/**
 * Parses and checks one reply. Returns `{ok: true, decision}` or `{ok: false, reason}`; the reason
 * is written for the model (it is fed back to it).
 * @param {string} content @param {string[]} toolNames
 */
export function parseDecision(content, toolNames) {
  const text = stripFences(content);
  if (text === '') return { ok: false, reason: 'the reply was empty' };
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const inner = firstObject(text);
    try {
      if (inner === undefined) throw error;
      value = JSON.parse(inner);
    } catch {
      return { ok: false, reason: `the reply is not valid JSON (${error.message})` };
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, reason: 'the reply must be one JSON object' };
  const thought = typeof value.thought === 'string' ? value.thought : '';
  const action = value.action;
  if (action === undefined || action === null || (typeof action === 'object' && !action.name && value.answer !== undefined)) {
    if (value.answer === undefined) return { ok: false, reason: 'give either an "action" or, when done, "action": null and an "answer"' };
    return { ok: true, decision: { thought, answer: value.answer } };
  }
  if (typeof action !== 'object' || Array.isArray(action))
    return { ok: false, reason: '"action" must be an object {"name", "arguments"} or null' };
  if (typeof action.name !== 'string' || !toolNames.includes(action.name)) {
    return { ok: false, reason: `unknown tool ${JSON.stringify(action.name)}; the tools are ${toolNames.join(', ')}` };
  }
  let args = action.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return { ok: false, reason: '"arguments" must be a JSON object' };
    }
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { ok: false, reason: '"arguments" must be a JSON object' };
  return { ok: true, decision: { thought, action: { name: action.name, arguments: args } } };
}

export function systemPrompt(tools) {
  const list = Object.entries(tools)
    .map(([name, tool]) => `- ${name}: ${tool.description} Arguments: ${tool.parameters}`)
    .join('\n');
  return [
    'You are an agent that completes a task in a workspace directory by using tools, one at a time.',
    'Tools:',
    list,
    '',
    'Reply with exactly one JSON object and nothing else (no Markdown, no code fences):',
    '{"thought": "what you think and plan next", "action": {"name": "<tool name>", "arguments": {…}}}',
    'After each action you get the tool result and reply again. When the task is done, reply:',
    '{"thought": "…", "action": null, "answer": "your final answer for the person"}',
    'Paths are relative to the workspace. Keep thoughts short.',
  ].join('\n');
}

/** System prompt + the task, then the last `window` messages, with a note where turns were dropped. */
export function windowHistory(messages, window) {
  const head = messages.slice(0, 2);
  const rest = messages.slice(2);
  if (rest.length <= window) return messages;
  // Start the window at an assistant turn so every tool result keeps the call it answers.
  let start = rest.length - window;
  if (rest[start]?.role !== 'assistant') start += 1;
  return [...head, { role: 'user', content: `(${start} earlier messages were dropped to save space)` }, ...rest.slice(start)];
}

/**
 * Runs the loop to an answer.
 * @param {{
 *   task: string,
 *   tools: Record<string, {description: string, parameters: string, run: (args: object) => Promise<unknown>}>,
 *   chat: (messages: object[], signal?: AbortSignal) =>
 *     Promise<{content: string, finishReason?: string, model: string, usage: {input: number, output: number}}>,
 *   signal?: AbortSignal,
 *   onStep?: (step: {step: number, thought: string, tool?: string, arguments?: object, ok?: boolean, result?: string}) => void,
 *   onUsage?: (usage: {input: number, output: number}, model: string) => void,
 * } & Partial<typeof LOOP_DEFAULTS>} options
 * @returns {Promise<{answer: unknown, steps: number, model: string, usage: {input: number, output: number, total: number}}>}
 */
export async function runLoop(options) {
  const settings = { ...LOOP_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  const { tools, chat, signal } = options;
  const toolNames = Object.keys(tools);
  const usage = { input: 0, output: 0, total: 0 };
  let model = '';
  const messages = [
    { role: 'system', content: systemPrompt(tools) },
    { role: 'user', content: `Task: ${options.task}` },
  ];

  async function think() {
    const extra = [];
    for (let attempt = 0; ; attempt += 1) {
      signal?.throwIfAborted();
      const reply = await chat([...windowHistory(messages, settings.historyWindow), ...extra], signal);
      usage.input += reply.usage.input;
      usage.output += reply.usage.output;
      usage.total = usage.input + usage.output;
      model = reply.model || model;
      options.onUsage?.(usage, model);
      const parsed = parseDecision(reply.content, toolNames);
      if (parsed.ok) return { decision: parsed.decision, raw: reply.content };
      const cut = reply.finishReason === 'length' ? ' Your reply was cut off: keep it shorter.' : '';
      if (attempt >= settings.maxParseRetries) {
        throw new LoopError(
          `the model gave ${attempt + 1} unusable replies in a row (last: ${parsed.reason}; ${JSON.stringify(shorten(reply.content, 120))})`,
        );
      }
      // Feed the error back; these two messages only live for this step's retries.
      extra.push(
        { role: 'assistant', content: shorten(reply.content, 2000) },
        {
          role: 'user',
          content: `Your reply could not be used: ${parsed.reason}.${cut} Reply again with exactly one JSON object in the required format.`,
        },
      );
    }
  }

  for (let step = 1; step <= settings.maxSteps; step += 1) {
    signal?.throwIfAborted();
    const { decision, raw } = await think();
    if (decision.answer !== undefined) {
      options.onStep?.({ step, thought: decision.thought, final: true });
      return { answer: decision.answer, steps: step, model, usage };
    }
    const { name, arguments: args } = decision.action;
    let ok = true;
    let result;
    try {
      result = asText(await tools[name].run(args));
    } catch (error) {
      if (signal?.aborted || error?.name === 'AbortError') throw signal?.reason ?? error;
      ok = false;
      result = `error: ${error.message}`;
    }
    options.onStep?.({
      step,
      thought: decision.thought,
      tool: name,
      arguments: args,
      ok,
      result: shorten(result, settings.partialResultChars),
    });
    messages.push(
      { role: 'assistant', content: raw.length > 4000 ? JSON.stringify({ thought: decision.thought, action: decision.action }) : raw },
      { role: 'user', content: `Result of ${name}${ok ? '' : ' (failed)'}:\n${shorten(result, settings.toolResultChars)}` },
    );
  }
  throw new LoopError(`no answer after ${settings.maxSteps} steps (the step limit); raise "max_steps" or split the task`, {
    retryable: false,
  });
}
