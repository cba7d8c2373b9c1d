/**
 * The script of a model that delegates to Backchannel, for the fake Anthropic server
 * (test/helpers/fake-anthropic.ts) behind a real Claude Code: when the request offers the Backchannel
 * MCP tools it answers with a `tool_use` of start_task, then (after the tool result carries the task
 * id) of wait_for_task, then a final text quoting the wait result. Every other request (titles,
 * summaries) gets a short text.
 */
import { blocksOf, type FakeAnthropicRequest, type FakeTurn } from '../helpers/fake-anthropic.js';

export interface DelegationScript {
  /** Prefix of the MCP tool names, e.g. `mcp__backchannel__`. */
  toolPrefix: string;
  /** Arguments of the start_task call. */
  startArgs: Record<string, unknown>;
}

/** The fake's `script` for a model that delegates through `start_task` and `wait_for_task`. */
export function delegation(script: DelegationScript): (request: FakeAnthropicRequest) => FakeTurn {
  const start = `${script.toolPrefix}start_task`;
  const wait = `${script.toolPrefix}wait_for_task`;
  return (request) => {
    if (!(request.body.tools ?? []).some((tool) => tool.name === start)) return { text: 'Backchannel test' };
    const result = lastToolResult(request);
    if (result === undefined)
      return { text: 'I will delegate this to a background sub-agent.', tool: { name: start, input: script.startArgs } };
    const started = /"task_id":\s*"([0-9a-f-]{36})"/.exec(result);
    if (started && !/"done"/.test(result)) return { tool: { name: wait, input: { task_id: started[1], timeout_seconds: 60 } } };
    return { text: `The sub-agent finished. Its report: ${result.replace(/\s+/g, ' ').slice(0, 500)}` };
  };
}

/** The text of the tool_result blocks in the last user message. */
function lastToolResult(request: FakeAnthropicRequest): string | undefined {
  const last = request.body.messages?.at(-1);
  if (last?.role !== 'user') return undefined;
  const results = blocksOf(last).filter((block) => block.type === 'tool_result');
  if (results.length === 0) return undefined;
  return results
    .map((block) =>
      typeof block.content === 'string'
        ? block.content
        : Array.isArray(block.content)
          ? (block.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('')
          : '',
    )
    .join('\n');
}
