/** The hub's answer calls: a sub-agent's question answered, or a tool call its caller hosts (docs/protocol.md). */
import type { BackchannelBridge } from '../../bridge/contract.js';
import { BridgeError } from '../../model/errors.js';
import type { BrokerLike } from '../broker-like.js';
import { requireTask } from './common.js';

/** `answer` and `answerToolCall`, each refused with `conflict` when the task does not wait for it. */
export function answerCalls(broker: BrokerLike): Pick<BackchannelBridge, 'answer' | 'answerToolCall'> {
  return {
    async answer(id, askId, text, via) {
      const task = requireTask(broker, id);
      if (task.pendingQuestion?.askId !== askId) {
        throw new BridgeError('conflict', `Task ${id} is not waiting for an answer to "${askId}"`);
      }
      if (!broker.answer(id, askId, text, via)) throw new BridgeError('conflict', `Task ${id} no longer waits for "${askId}"`);
    },
    async answerToolCall(id, callId, answer) {
      requireTask(broker, id);
      if (!broker.answerToolCall(id, callId, answer)) throw new BridgeError('conflict', noToolCall(id, callId));
    },
  };
}

/** The refusal of an answer to a call the task does not wait on (one wording for every backend). */
export function noToolCall(id: string, callId: string): string {
  return `Task ${id} is not waiting on a tool call with id "${callId.slice(0, 80)}"`;
}
