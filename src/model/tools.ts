/**
 * Tools a task's caller hosts (docs/protocol.md §6.1): the tools offered to a task (`TaskSpec.tools`,
 * declared once here as zod and used by the task request), a call the agent made and that waits for
 * its caller (`PendingToolCall`, in snapshots and `tool_call` updates), and the caller's answer
 * (`ToolAnswer`: content, or an error). The same mechanism as a question (`ask`/`answer`), with the
 * caller as the one who answers. Runs anywhere: no Node or DOM imports.
 */
import * as z from 'zod/mini';
import type { OfferedTool } from '../protocol/index.js';
import { checkInputSize } from './limits.js';
import { describe, described, expected, PLACE, text } from './shapes.js';

/** A tool's name: what the agent calls it by (`mcp__files__write`, `Edit`). */
export const MAX_TOOL_NAME = 200;
/** A tool's description, for the agent's model (Claude Code's longest are ≈ 10 K characters). */
export const MAX_TOOL_DESCRIPTION = 100_000;
/** Tools offered to one task (Claude Code offers a few dozen). */
export const MAX_TOOLS = 512;
/** The text of an error answer. */
export const MAX_TOOL_ERROR = 64 * 1024;

/** One offered tool: its name, what it does, and the JSON Schema of its arguments. */
export const TOOL_DEFINITION = z.strictObject(
  {
    name: text({ max: MAX_TOOL_NAME }),
    description: z.optional(text({ allowEmpty: true, max: MAX_TOOL_DESCRIPTION })),
    input_schema: z.record(z.string(), z.unknown(), { error: expected('a JSON Schema object') }),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `Unexpected \`${PLACE}.${String(issue.keys[0]).slice(0, 40)}\` (a tool has name, description and input_schema)`
        : issue.code === 'invalid_type'
          ? `Expected \`${PLACE}\` to be a tool {name, description?, input_schema}, got ${describe(issue.input)}`
          : undefined,
  },
);

/** A tool the task's caller hosts and offers to its agent. */
export type ToolDefinition = z.output<typeof TOOL_DEFINITION>;

/** The tools of a request: at most MAX_TOOLS, each name once. */
export const TOOL_DEFINITIONS = described(
  z.array(TOOL_DEFINITION, { error: expected('an array of tools') }).check((ctx) => {
    if (ctx.value.length > MAX_TOOLS) {
      ctx.issues.push({ code: 'custom', input: ctx.value, message: `Expected at most ${MAX_TOOLS} \`${PLACE}\`, got ${ctx.value.length}` });
      return;
    }
    const seen = new Set<string>();
    for (const tool of ctx.value) {
      if (seen.has(tool.name)) {
        ctx.issues.push({
          code: 'custom',
          input: ctx.value,
          message: `Expected each of \`${PLACE}\` once, got ${describe(tool.name)} twice`,
        });
        return;
      }
      seen.add(tool.name);
    }
  }),
  'Tools the caller hosts, offered to the agent: it calls them with `tool_call` and the caller answers (docs/protocol.md §6.1)',
);

// The model's tool and the protocol's are the same shape (the protocol cannot import the model).
const _sameShape: (tool: ToolDefinition) => OfferedTool = (tool) => tool;
void _sameShape;

/** A call of the agent to a tool its caller hosts, waiting for the caller's answer. */
export interface PendingToolCall {
  /** The agent's id of the call (unique among the task's pending calls). */
  callId: string;
  name: string;
  /**
   * The arguments, as the agent sent them (a JSON object). In a snapshot, arguments longer than
   * MAX_SNAPSHOT_ARGUMENTS_CHARS of JSON are their JSON's first ARGUMENTS_PREVIEW_CHARS, `…`-ended,
   * and `argumentsBytes` says how long they are; the `tool_call` update carries them whole.
   */
  arguments: unknown;
  /** Set when a snapshot carries a preview of the arguments: the UTF-8 length of their JSON. */
  argumentsBytes?: number;
  /** ISO 8601. */
  calledAt: string;
}

/**
 * The longest arguments (as JSON) a snapshot carries whole. A task may have 64 calls waiting, each
 * with arguments as long as a protocol line (64 MiB): every listing and event would carry them all.
 */
export const MAX_SNAPSHOT_ARGUMENTS_CHARS = 64 * 1024;
/** How much of longer arguments a snapshot shows. */
export const ARGUMENTS_PREVIEW_CHARS = 2048;

/** `call` as a snapshot shows it: whole, or with a preview of arguments too long to carry (see PendingToolCall). */
export function callInSnapshot(call: PendingToolCall): PendingToolCall {
  const json = JSON.stringify(call.arguments) ?? '';
  if (json.length <= MAX_SNAPSHOT_ARGUMENTS_CHARS) return call;
  return { ...call, arguments: json.slice(0, ARGUMENTS_PREVIEW_CHARS) + '…', argumentsBytes: new TextEncoder().encode(json).length };
}

/** The caller's answer to a tool call: what the tool returned (any JSON, usually a string), or why it failed. */
export type ToolAnswer = { content: unknown } | { error: string };

/**
 * An answer checked: `{content}` (present, any JSON that fits one protocol line) or `{error}` (a
 * non-empty line of text), nothing else.
 */
export const TOOL_ANSWER = z.record(z.string(), z.unknown(), { error: expected('{content} or {error}') }).check((ctx) => {
  const value = ctx.value;
  const keys = Object.keys(value);
  const fail = (message: string): void => void ctx.issues.push({ code: 'custom', input: value, message });
  if (keys.length !== 1 || (keys[0] !== 'content' && keys[0] !== 'error')) {
    return fail(`Expected \`${PLACE}\` to be {content} or {error}, got an object with ${keys.join(', ') || 'no keys'}`);
  }
  if (keys[0] === 'error') {
    const error = value.error;
    if (typeof error !== 'string' || error.trim() === '')
      return fail(`Expected \`${PLACE}.error\` to be a non-empty string, got ${describe(error)}`);
    if (error.length > MAX_TOOL_ERROR)
      return fail(`Expected \`${PLACE}.error\` to be at most ${MAX_TOOL_ERROR} characters, got ${error.length}`);
    return;
  }
  if (value.content === undefined) return fail(`Expected \`${PLACE}.content\` to be a JSON value`);
  try {
    checkInputSize(value.content, 'the tool result');
  } catch (error) {
    fail((error as Error).message);
  }
}) as unknown as z.ZodMiniType<ToolAnswer, unknown>;

/** The names of tools, for a message: `Read, Write, Edit` (or `none`). */
export function toolNames(tools: readonly Pick<ToolDefinition, 'name'>[] | undefined): string {
  return tools && tools.length > 0 ? tools.map((t) => t.name).join(', ') : 'none';
}

/** `waiting for Write` / `waiting for Read, Write`: what a task waiting on its caller's tools shows. */
export function waitingForTools(calls: readonly Pick<PendingToolCall, 'name'>[] | undefined): string | undefined {
  if (!calls || calls.length === 0) return undefined;
  return `waiting for ${[...new Set(calls.map((c) => c.name))].join(', ')}`;
}
