/**
 * The MCP server for 2026-07-28 clients, on the official SDK v2 (`@modelcontextprotocol/server`): the same tool
 * table (./all-tools.ts, each row called through `runTool`) as the 2025-11-25 server (./server.ts, SDK v1), the same
 * one client (src/client), and what the new revision changes (the SDK does `server/discover`, the per-request `_meta`
 * envelope and `resultType`):
 *
 * - A sub-agent's question while `run_task` waits is a multi-round-trip input request: the call answers
 *   `resultType: "input_required"` with the question (./input-requests.ts) and a `requestState` naming the task,
 *   signed by this process (HMAC, `createRequestStateCodec`); the client's retry echoes it with the answer, and the
 *   call goes on waiting for the same task — it never starts a second one. A client that takes no elicitation gets
 *   the question in the tool result instead, for answer_question.
 * - The Tasks extension (./task-extension.ts): a client that declares it gets `run_task` as a task at once.
 * - A factory (`modernServerFactory`): the SDK builds one instance per stdio connection and one per HTTP request;
 *   they share the client and the requestState key, so any instance of this process takes any round of a call.
 */
import { randomBytes } from 'node:crypto';
import {
  createRequestStateCodec,
  inputRequired,
  McpServer,
  type CallToolResult as ModernCallToolResult,
  type InputRequests,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { BackchannelClient } from '../client/index.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { MCP_TOOLS } from './all-tools.js';
import { answerFromResponses, questionInputRequests } from './input-requests.js';
import { finalResult, jsonResult, summarize, withWholeResult } from './snapshots.js';
import { parseStartArgs, START_ANNOTATIONS, START_SHAPE, startTask, type StartArgs } from './start-task.js';
import { declaresTasks, findTask, modernTask, serveTaskMethods } from './task-extension.js';
import { runTool, toolError, type McpTool, type ToolContext } from './tool-table.js';
import { waitForTask } from './tools.js';
import { INSTRUCTIONS } from './server.js';

/** What a `requestState` of `run_task` carries: the task the call waits for (signed, so a client cannot swap it). */
interface RunState {
  taskId: string;
}

/** How long a question may wait for the person's answer before the retry carrying it is refused as expired. */
const REQUEST_STATE_TTL_SECONDS = 24 * 60 * 60;
/** The longest a timer may be (Node's limit): `run_task` waits for its task without a bound of its own. */
const UNBOUNDED_MS = 2 ** 31 - 1;

/** The tool context of a modern call: the SDK v2 has no session to follow tasks on, nor a push channel for questions. */
function modernContext(client: BackchannelClient): ToolContext {
  return { client, track: () => {}, elicits: () => false, progress: () => {} };
}

/** Makes the 2026-07-28 server instances of this process (see the header). */
export function modernServerFactory(client: BackchannelClient, version: string): () => McpServer {
  const codec = createRequestStateCodec<RunState>({ key: randomBytes(32), ttlSeconds: REQUEST_STATE_TTL_SECONDS });
  return () => createModernServer(client, version, codec);
}

function createModernServer(client: BackchannelClient, version: string, codec: RequestStateCodec<RunState>): McpServer {
  const server = new McpServer(
    { name: 'backchannel', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, requestState: { verify: codec.verify } },
  );
  const context = modernContext(client);
  for (const tool of MCP_TOOLS) registerModernTool(server, tool, context);
  server.registerTool(
    'run_task',
    {
      title: 'Run a sub-agent and wait for its result',
      description:
        'Runs a sub-agent and returns its result once it ends. If the sub-agent asks a question meanwhile, the question ' +
        'comes to you as an input request; your answer goes to the sub-agent. Clients with the MCP Tasks extension get ' +
        'a task at once instead (tasks/get). Same arguments as start_task.',
      inputSchema: z.object(START_SHAPE),
      annotations: START_ANNOTATIONS,
    },
    async (args: StartArgs, ctx: ServerContext) => {
      try {
        return await runTaskRound(client, codec, args, ctx);
      } catch (error) {
        return toolError(error) as ModernCallToolResult;
      }
    },
  );
  serveTaskMethods(server, client);
  answerWithTasks(server, client);
  return server;
}

/** A row of the tool table on the SDK v2: its shape as a zod object, its call through `runTool` (as on v1). */
function registerModernTool(server: McpServer, tool: McpTool, context: ToolContext): void {
  const { name, title, description, inputSchema, annotations } = tool;
  server.registerTool(
    name,
    { title, description, inputSchema: z.object(inputSchema), annotations },
    async (args: Record<string, unknown>, ctx: ServerContext) => {
      const extra = { signal: ctx.mcpReq.signal, ...(ctx.mcpReq._meta ? { _meta: ctx.mcpReq._meta } : {}) };
      return (await runTool(tool, args as never, context, extra)) as ModernCallToolResult;
    },
  );
}

/**
 * One round of a waiting `run_task`: the first starts the task, a retry (its signed requestState names the task)
 * answers the question from the client's input responses; both then wait until the task ends or asks.
 */
async function runTaskRound(client: BackchannelClient, codec: RequestStateCodec<RunState>, args: StartArgs, ctx: ServerContext) {
  const state = ctx.mcpReq.requestState<RunState>();
  let answered: string | undefined;
  let id: string;
  if (state) {
    const task = await findTask(client, state.taskId);
    id = task.id;
    if (await answerFromResponses(client, task, ctx.mcpReq.inputResponses)) answered = task.pendingQuestion?.askId;
  } else {
    id = await startTask(client, args);
  }
  // A question just answered may still show until the agent takes the answer: wait past it, not on it.
  const asks = (task: TaskSnapshot): boolean => task.pendingQuestion !== undefined && task.pendingQuestion.askId !== answered;
  const task = await waitForTask(client, id, UNBOUNDED_MS, undefined, ctx.mcpReq.signal, asks);
  if (ctx.mcpReq.signal.aborted && !isFinished(task.state)) {
    // The client gave up the call (notifications/cancelled, or its HTTP request went away): so does the task.
    await client.cancel(id, 'cancelled by the MCP client').catch(() => {});
    return finalResult(task) as ModernCallToolResult;
  }
  if (isFinished(task.state)) return finalResult(await withWholeResult(client, task)) as ModernCallToolResult;
  const requests = questionInputRequests(task);
  if (requests && takesElicitation(ctx)) {
    return inputRequired({ inputRequests: requests as unknown as InputRequests, requestState: await codec.mint({ taskId: id }) });
  }
  return jsonResult(summarize(task)) as ModernCallToolResult;
}

/** True when the request's client declared form elicitation (an input request of another kind would be refused). */
function takesElicitation(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, { elicitation?: unknown } | undefined> | undefined;
  return envelope?.['io.modelcontextprotocol/clientCapabilities']?.elicitation !== undefined;
}

type RequestHandler = (request: { method: string; params?: Record<string, unknown> }, ctx: ServerContext) => Promise<unknown>;

/**
 * `run_task` answers a client that declares the Tasks extension with a task (`resultType: "task"`), the Backchannel
 * task it started. Installed around the SDK's `tools/call` handler, which would check the answer as a tool result:
 * the SDK has no hook for an extension's result kinds. A retry of an input-required round stays a plain call.
 */
function answerWithTasks(server: McpServer, client: BackchannelClient): void {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers;
  const installed = handlers.get('tools/call');
  if (!installed) throw new Error('The MCP SDK has no tools/call handler to extend (SDK changed?)');
  handlers.set('tools/call', async (request, ctx) => {
    if (request.params?.name !== 'run_task' || !declaresTasks(ctx) || ctx.mcpReq.requestState() !== undefined) {
      return installed(request, ctx);
    }
    let id: string;
    try {
      id = await startTask(client, parseStartArgs(request.params.arguments ?? {}));
    } catch (error) {
      // Nothing started: the failure is the call's tool error, as for a plain call.
      return toolError(error);
    }
    return { resultType: 'task', ...modernTask(await findTask(client, id)) };
  });
}
