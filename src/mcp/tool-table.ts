/**
 * The shape every MCP tool of the server has — one row of a table of `{ name, title, description,
 * inputSchema, annotations, handler }` — and the one way a row is called (`runTool`), which both
 * servers use (./all-tools.ts is the table they register). The task tools (./tools.ts), the coding-task
 * change tools (./change-tools.ts) and the schedule tools (./schedule-tools.ts) are tables of it;
 * `run_task` (./run-task.ts) has the same fields, with an MCP-task handler.
 *
 * A handler's failure is a tool error (`isError: true`) whose text is the message for people; when
 * the failure is a `BridgeError`, the result's `_meta` also carries `{ code, message }` under
 * `ERROR_META_KEY`, so a client branches on the code, never on the text.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type * as z from 'zod';
import { BridgeError, type BackchannelClient, type ErrorCode } from '../client/index.js';
import type { TaskSnapshot } from '../model/task.js';

/** What every tool's handler reaches: the one client and this session's task tracking. */
export interface ToolContext {
  /** The one client: the same calls and handles as every other front-end (src/client). */
  client: BackchannelClient;
  /** Follows a task started by this session (progress notifications, elicitation of its questions). */
  track(taskId: string, progressToken?: string | number): void;
  /** True when this session puts the task's questions to the client itself (elicitation). */
  elicits(task: TaskSnapshot): boolean;
  /** Sends a progress notification for `task` to the request's progress token. */
  progress(token: string | number | undefined, task: TaskSnapshot): void;
}

/**
 * What a handler reads of the SDK's context of one call: its abort signal and its `_meta` (progress token). Both SDKs'
 * contexts give it (v1's `extra` as it is, v2's `ctx.mcpReq`), so one table serves both eras (./modern-server.ts).
 */
export interface ToolExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
}

/** The arguments a tool's handler gets: its input shape's parsed output (one declaration, the type derived). */
export type ToolArgs<Shape extends z.ZodRawShape> = z.infer<z.ZodObject<Shape>>;

/** One tool of the server. Names, titles, descriptions, schemas and annotations are what clients see. */
export interface McpTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  /** The arguments, as zod: the SDK checks them and publishes their JSON Schema; `ToolArgs` is their type. */
  inputSchema: Shape;
  /** Every hint set on every tool (test/mcp/annotations.test.ts pins them): clients decide what to confirm by them. */
  annotations: Required<Pick<ToolAnnotations, 'readOnlyHint' | 'openWorldHint'>> & ToolAnnotations;
  handler(args: ToolArgs<Shape>, context: ToolContext, extra: ToolExtra): Promise<CallToolResult>;
}

/** A row of a table: checks the handler against its own shape, then erases the shape for the table's type. */
export function defineTool<Shape extends z.ZodRawShape>(tool: McpTool<Shape>): McpTool {
  return tool as unknown as McpTool;
}

/** The `_meta` key of a failed call's `{ code, message }`. */
export const ERROR_META_KEY = 'backchannel/error';

/** Calls one tool the way both servers do: its handler's result, or its failure as a tool error (`toolError`). */
export async function runTool(
  tool: McpTool,
  args: ToolArgs<z.ZodRawShape>,
  context: ToolContext,
  extra: ToolExtra,
): Promise<CallToolResult> {
  try {
    return await tool.handler(args, context, extra);
  } catch (error) {
    return toolError(error);
  }
}

/** Registers every tool of `tools` on a 2025-11-25 server (SDK v1), each called through `runTool` with `context`. */
export function registerTools(server: McpServer, tools: readonly McpTool[], context: ToolContext): void {
  for (const tool of tools) {
    const { name, title, description, inputSchema, annotations } = tool;
    const config = { title, description, inputSchema, annotations };
    server.registerTool(name, config, (args: ToolArgs<z.ZodRawShape>, extra: ToolExtra) => runTool(tool, args, context, extra));
  }
}

/**
 * A failure as a tool result: the message as text (what the SDK would send), and a BridgeError's code
 * (and `data`, when it has some) in `_meta`, from the one error table (src/model/errors.ts).
 */
export function toolError(error: unknown): CallToolResult {
  const message = error instanceof Error ? error.message : String(error);
  const result: CallToolResult = { content: [{ type: 'text', text: message }], isError: true };
  if (BridgeError.is(error)) {
    const body = error.toBody().error;
    result._meta = {
      [ERROR_META_KEY]: { code: body.code satisfies ErrorCode, message, ...(body.data === undefined ? {} : { data: body.data }) },
    };
  }
  return result;
}
