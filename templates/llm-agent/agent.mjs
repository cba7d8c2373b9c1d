#!/usr/bin/env node
/**
 * An LLM agent as a Backchannel sub-agent: the model picks one tool call at a time (as JSON), the
 * agent runs it in the task's working directory and feeds the result back, until the model answers.
 *
 * Input: a task string, or
 *   {"task": "…", "model": "gpt-4o-mini", "max_steps": 12, "allow_writes": false,
 *    "history_window": 16, "request_timeout_ms": 120000}
 * Environment (the owner's, never the input's): OPENAI_BASE_URL (default https://api.openai.com/v1;
 *   Ollama: http://localhost:11434/v1), OPENAI_API_KEY, OPENAI_MODEL, LLM_AGENT_COMMANDS
 *   (comma-separated allowlist), LLM_AGENT_WRITE_DIR (an absolute directory: write_file is offered,
 *   and writes only there; unset: no writes).
 *
 * Whoever submits the task writes its input (an MCP client, the panel) and, through the model, its
 * task text: so what the agent may run and where it may write come from the environment only. An
 * input naming `commands` or asking for writes the owner did not allow is refused.
 *
 * Progress: one partial per step {step, thought, tool, arguments, ok, result}. Result:
 * {answer, steps}; meta.model_used and meta.token_usage summed over every model call.
 */
import path from 'node:path';
import { runAgent } from 'backchannel-agents/agent-runtime';
import { runLoop } from './loop.mjs';
import { createChat, DEFAULT_BASE_URL } from './openai.mjs';
import { createTools, DEFAULT_COMMANDS } from './tools.mjs';

const DEFAULT_MODEL = 'gpt-4o-mini';

class InputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'InputError';
    this.retryable = false;
  }
}

function positiveInt(value, name) {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1) throw new InputError(`"${name}" must be a positive integer`);
  return value;
}

function readOptions(input) {
  const options = typeof input === 'string' ? { task: input } : input && typeof input === 'object' && !Array.isArray(input) ? input : {};
  const task = options.task ?? options.prompt;
  if (typeof task !== 'string' || task.trim() === '')
    throw new InputError('input needs a "task" (a non-empty string), e.g. {"task": "Count the TODOs in src/"}');
  if (options.commands !== undefined) {
    throw new InputError('input "commands" is not accepted: only the owner sets the allow-list, in LLM_AGENT_COMMANDS');
  }
  let commands;
  if (process.env.LLM_AGENT_COMMANDS) {
    commands = process.env.LLM_AGENT_COMMANDS.split(',')
      .map((c) => c.trim())
      .filter(Boolean);
    if (!commands.every((c) => /^[\w.+-]+$/.test(c))) throw new InputError('LLM_AGENT_COMMANDS must be comma-separated program names');
  }
  const writeDir = process.env.LLM_AGENT_WRITE_DIR || undefined;
  if (writeDir !== undefined && !path.isAbsolute(writeDir)) throw new InputError('LLM_AGENT_WRITE_DIR must be an absolute directory');
  if (options.allow_writes !== undefined && typeof options.allow_writes !== 'boolean')
    throw new InputError('"allow_writes" must be true or false');
  if (options.allow_writes === true && writeDir === undefined) {
    throw new InputError('input "allow_writes": true is not accepted: only the owner allows writes, with LLM_AGENT_WRITE_DIR=<directory>');
  }
  const model = typeof options.model === 'string' && options.model ? options.model : process.env.OPENAI_MODEL || DEFAULT_MODEL;
  const baseUrl = process.env.OPENAI_BASE_URL || DEFAULT_BASE_URL;
  const apiKey = process.env.OPENAI_API_KEY;
  if (!apiKey && baseUrl === DEFAULT_BASE_URL) {
    throw new InputError(
      'OPENAI_API_KEY is not set (or point OPENAI_BASE_URL at a local server such as Ollama: http://localhost:11434/v1)',
    );
  }
  return {
    task,
    model,
    baseUrl,
    apiKey,
    commands: commands ?? DEFAULT_COMMANDS,
    writeDir: options.allow_writes === false ? undefined : writeDir,
    maxSteps: positiveInt(options.max_steps, 'max_steps'),
    historyWindow: positiveInt(options.history_window, 'history_window'),
    requestTimeoutMs: positiveInt(options.request_timeout_ms, 'request_timeout_ms'),
  };
}

runAgent(async (task) => {
  const options = readOptions(task.input);
  const chat = createChat({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    model: options.model,
    requestTimeoutMs: options.requestTimeoutMs,
  });
  const tools = createTools({
    root: process.cwd(),
    writeDir: options.writeDir,
    commands: options.commands,
    signal: task.signal,
    ask: (question, choices) => task.ask(question, choices ? { choices } : {}),
  });
  task.meta({ model_used: options.model });
  const outcome = await runLoop({
    task: options.task,
    tools,
    chat,
    signal: task.signal,
    maxSteps: options.maxSteps,
    historyWindow: options.historyWindow,
    // Meta first, so a failure later still reports what was spent.
    onUsage: (usage, model) => task.meta({ model_used: model, token_usage: { ...usage } }),
    onStep: (step) => task.partial(step),
  });
  return { answer: outcome.answer, steps: outcome.steps };
});
