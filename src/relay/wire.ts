/**
 * The relay's private wire: what the stdio MCP relay (server.ts, a process the CLI starts) and the
 * agent that holds the task (host.ts) say to each other over the relay socket, one JSON value per
 * line (the protocol's NDJSON framing). Each shape is declared once, here, with zod; both sides parse
 * every line they read with it, and a line of another shape is dropped, never trusted.
 *
 * Relay → agent: `list` (the task's offered tools), `call` (one MCP `tools/call`), `cancel` (the MCP
 * client cancelled that call). Agent → relay: the answer to request `id`: `tools`, `content` (any
 * JSON value, as the caller answered it) or `error` (a one-line message).
 */
import * as z from 'zod';
import type { OfferedTool } from '../protocol/index.js';

/** A tool the task was offered, as the protocol's hand-off carries it (docs/protocol.md). */
export const RelayTool = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
});
export type RelayTool = z.infer<typeof RelayTool>;
// The relay's tool and the protocol's are the same shape.
const _sameShape: (tool: RelayTool) => OfferedTool = (tool) => tool;
void _sameShape;

const RequestId = z.number().int().nonnegative();

export const RelayRequest = z.discriminatedUnion('op', [
  z.object({ op: z.literal('list'), id: RequestId }),
  z.object({ op: z.literal('call'), id: RequestId, name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) }),
  z.object({ op: z.literal('cancel'), id: RequestId }),
]);
export type RelayRequest = z.infer<typeof RelayRequest>;

export const RelayAnswer = z.union([
  z.object({ id: RequestId, tools: z.array(RelayTool) }),
  z.object({ id: RequestId, error: z.string() }),
  z.object({ id: RequestId, content: z.unknown() }),
]);
export type RelayAnswer = z.infer<typeof RelayAnswer>;

/** The name of the relay's MCP server in the CLIs' configs: Claude Code shows its tools as `mcp__backchannel__<tool>`. */
export const RELAY_SERVER_NAME = 'backchannel';
