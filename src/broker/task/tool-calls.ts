/**
 * A task's calls to tools its caller hosts (`tool_call`/`tool_result`, docs/protocol.md §6.1): the same
 * exchange as a question (./questions.ts) with the caller as the one who answers, and several calls
 * may wait at once. A call to a tool the task was not offered, a second call under a waiting id, or
 * a call after the task ended is answered at once with an error; nothing waits on a call nobody can
 * answer. The calls themselves are shown through the Task (`tool_call`/`tool_result` updates); this
 * keeps each one's reply path. A call waits for as long as its caller takes: the caller's own limits
 * (a gateway session's idle time, the task's deadline, a cancel) end it.
 */
import type { BrokerMessage, ToolCallMessage } from '../../protocol/index.js';
import { toolNames, type ToolAnswer } from '../../model/tools.js';
import type { Task } from './task.js';

type Reply = (message: BrokerMessage) => void;

/** Calls one task may have waiting at once (a model's parallel calls are a handful). */
export const MAX_PENDING_TOOL_CALLS = 64;

export class PendingToolCalls {
  private readonly waiting = new Map<string, Reply>();

  constructor(private readonly task: Task) {}

  /** The agent calls a tool. A call that cannot be answered is refused at once with an error result. */
  call(message: ToolCallMessage, reply: Reply): void {
    const { call_id: callId, name } = message;
    const refused = this.refusal(message);
    if (refused !== undefined) {
      reply({ type: 'tool_result', task_id: this.task.id, call_id: callId, error: refused });
      return;
    }
    this.waiting.set(callId, reply);
    this.task.toolCall({ callId, name, arguments: message.arguments });
  }

  /** The caller answers. Returns false when no call with that id waits. */
  answer(callId: string, answer: ToolAnswer): boolean {
    const reply = this.waiting.get(callId);
    if (!reply) return false;
    this.waiting.delete(callId);
    const base = { type: 'tool_result', task_id: this.task.id, call_id: callId } as const;
    reply('error' in answer ? { ...base, error: answer.error } : { ...base, content: answer.content });
    this.task.toolResult(callId);
    return true;
  }

  /** How many calls wait. */
  get size(): number {
    return this.waiting.size;
  }

  /**
   * The attempt that made the calls is over (decided, retried or ended): they wait no more, and get
   * no reply (its agent is stopping). `note` goes in the task's log when there were any.
   */
  dropAll(note?: string): void {
    if (this.waiting.size === 0) return;
    const ids = [...this.waiting.keys()];
    this.waiting.clear();
    for (const callId of ids) this.task.toolResult(callId);
    if (note !== undefined)
      this.task.addLog('broker', `${note}: ${ids.length} tool call(s) no longer wait (${ids.join(', ').slice(0, 200)})`);
  }

  private refusal({ call_id: callId, name }: ToolCallMessage): string | undefined {
    if (this.task.finished) return 'the task has ended';
    const offered = this.task.spec.tools;
    if (!offered?.some((tool) => tool.name === name)) {
      return `tool "${name.slice(0, 80)}" was not offered to this task (offered: ${toolNames(offered).slice(0, 1000)})`;
    }
    if (this.waiting.has(callId)) return `a call with id "${callId}" is already waiting for its result`;
    if (this.waiting.size >= MAX_PENDING_TOOL_CALLS)
      return `${MAX_PENDING_TOOL_CALLS} tool calls are already waiting; wait for a result first`;
    return undefined;
  }
}
