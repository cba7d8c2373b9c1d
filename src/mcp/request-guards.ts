/**
 * Checks the SDK (pinned in package.json) leaves to the server, run before its own request handlers:
 * - A task-augmented `tools/call` of a tool without task support is refused with -32601 before the tool
 *   runs (spec 2025-11-25, Tasks, tool-level negotiation); the SDK would run it and only then fail the
 *   call with "Invalid task creation result", a sub-agent started whose id the client never got.
 * - A task-augmented call that creates no task (bad arguments, a start the broker refused) fails with
 *   -32602 and the reason in one line, instead of the SDK's dump of the CreateTaskResult schema.
 * - `tasks/*` requests with mistyped params (`{"cursor": 5}`) get -32602 with one line, not -32603
 *   with the validator's JSON.
 * The SDK has no public hook before a handler parses its request, so its installed handlers are wrapped.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

export type Handler = (request: { method: string; id?: unknown; params?: Record<string, unknown> }, extra: unknown) => Promise<unknown>;

const TASK_METHODS = ['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel'];

export interface TaskTool {
  /** The tool's arguments, checked before the SDK's task path (which would hide their error). */
  shape: z.ZodRawShape;
}

/**
 * Installs the checks on `server` once every tool is registered. `startFailure(requestId)` gives (and forgets) the
 * error a task tool's createTask threw for that request, if it did.
 */
export function guardRequests(
  server: McpServer,
  taskTools: Record<string, TaskTool>,
  startFailure: (requestId: unknown) => Error | undefined,
): void {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers;
  wrap(handlers, 'tools/call', (call) => async (request, extra) => {
    const params = request.params ?? {};
    if (params.task === undefined) return call(request, extra);
    const name = String(params.name);
    const tool = taskTools[name];
    if (!tool) {
      throw new RequestError(
        ErrorCode.MethodNotFound,
        `Tool ${name} does not support task-augmented calls (its execution.taskSupport is "forbidden"): call it without "task"` +
          `${Object.keys(taskTools).length ? `, or use ${Object.keys(taskTools).join(' or ')}` : ''}`,
      );
    }
    const args = z.object(tool.shape).safeParse(params.arguments ?? {});
    if (!args.success) throw new RequestError(ErrorCode.InvalidParams, `Invalid arguments for tool ${name}: ${oneLine(args.error)}`);
    try {
      return await call(request, extra);
    } catch (error) {
      const failure = startFailure(request.id);
      if (!failure) throw error;
      const reason = (failure as { code?: unknown }).code;
      throw new RequestError(ErrorCode.InvalidParams, failure.message, typeof reason === 'string' ? { reason } : undefined);
    } finally {
      startFailure(request.id);
    }
  });
  for (const method of TASK_METHODS) {
    wrap(handlers, method, (call) => async (request, extra) => {
      try {
        return await call(request, extra);
      } catch (error) {
        if (isZodError(error)) throw new RequestError(ErrorCode.InvalidParams, `Invalid params for ${method}: ${oneLine(error)}`);
        throw error;
      }
    });
  }
}

/**
 * A JSON-RPC error the SDK sends as it is: `code`, `message`, `data` (an McpError would send its message with an
 * "MCP error <code>: " prefix, which the client's McpError prefixes again).
 */
class RequestError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Puts `around` about the SDK's installed handler of `method` (there is no public hook before a handler runs). */
export function wrapHandler(server: McpServer, method: string, around: (call: Handler) => Handler): void {
  wrap((server.server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers, method, around);
}

function wrap(handlers: Map<string, Handler>, method: string, around: (call: Handler) => Handler): void {
  const installed = handlers.get(method);
  if (!installed) throw new Error(`The MCP SDK has no ${method} handler to guard (SDK changed?)`);
  handlers.set(method, around(installed));
}

/** The SDK parses with its own import of zod: recognized by shape, not class. */
function isZodError(error: unknown): error is Pick<z.ZodError, 'issues'> {
  return error instanceof Error && /ZodError$/.test(error.name) && Array.isArray((error as { issues?: unknown }).issues);
}

/** A zod error in one line, worded like the SDK's own argument errors: `message at path; …`. */
function oneLine(error: Pick<z.ZodError, 'issues'>): string {
  return error.issues.map((issue) => `${issue.message}${issue.path.length ? ` at ${issue.path.join('.')}` : ''}`).join('; ');
}
