/**
 * A task's `ask`/`answer` exchange: at most one question waits at a time, for at most `timeoutMs`.
 * The question itself is shown through the Task (`ask`/`answered`); this keeps the reply path.
 */
import { BridgeError } from '../../model/errors.js';
import { APPROVAL_ANSWERS_KEY, choiceAnswer, MAX_APPROVAL_ANSWERS } from '../../model/questions.js';
import type { AskMessage, BrokerMessage } from '../../protocol/index.js';
import type { Task } from './task.js';
import type { PendingQuestion as PendingQuestionShown } from '../../model/task.js';

type Reply = (message: BrokerMessage) => void;
type PendingQuestionContext = NonNullable<PendingQuestionShown['worktree']>;

export class PendingQuestion {
  private waiting:
    { askId: string; choices?: string[]; approval?: AskMessage['approval']; reply: Reply; timer: NodeJS.Timeout } | undefined;

  constructor(
    private readonly task: Task,
    private readonly timeoutMs: number,
    /** What a coding task's question carries besides its text (its branch and changed files), read when it asks. */
    private readonly context: () => PendingQuestionContext | undefined = () => undefined,
  ) {}

  /** The agent asks. A second question while one waits is refused at once. */
  ask(message: AskMessage, reply: Reply): void {
    const taskId = this.task.id;
    // A question from a task that already ended (a remote agent's, late) must not arm a timer nobody clears.
    const refused = this.task.finished
      ? 'the task has ended'
      : this.waiting
        ? 'another question is already waiting for an answer'
        : undefined;
    if (refused) {
      reply({ type: 'answer', task_id: taskId, ask_id: message.ask_id, error: refused });
      return;
    }
    const timer = setTimeout(() => {
      if (this.waiting?.askId !== message.ask_id) return;
      this.waiting = undefined;
      reply({ type: 'answer', task_id: taskId, ask_id: message.ask_id, error: `nobody answered within ${this.timeoutMs} ms` });
      this.task.answered(`question "${message.question.slice(0, 80)}" timed out`);
    }, this.timeoutMs);
    this.waiting = {
      askId: message.ask_id,
      ...(message.choices ? { choices: message.choices } : {}),
      ...(message.approval ? { approval: message.approval } : {}),
      reply,
      timer,
    };
    const worktree = this.context();
    this.task.ask({
      askId: message.ask_id,
      question: message.question,
      ...(message.choices ? { choices: message.choices } : {}),
      ...(worktree ? { worktree } : {}),
      ...(message.approval ? { approval: message.approval } : {}),
    });
  }

  /**
   * A person answers. Returns false when no question with that id waits. A question with choices
   * takes one of them, or its number (`choiceAnswer`); anything else throws an `invalid_request`
   * BridgeError naming the choices, and the question goes on waiting.
   */
  answer(askId: string, text: string, via?: string): boolean {
    const waiting = this.waiting;
    if (!waiting || waiting.askId !== askId) return false;
    const chosen = choiceAnswer(waiting, String(text));
    if ('refused' in chosen) throw new BridgeError('invalid_request', chosen.refused);
    this.drop();
    waiting.reply({ type: 'answer', task_id: this.task.id, ask_id: askId, answer: chosen.answer, ...(via ? { via } : {}) });
    // An approval's decision is logged with its door, and kept in the task's meta for history (docs/acp.md).
    if (waiting.approval) this.recordApproval(waiting.approval, chosen.answer, via ?? 'control');
    this.task.answered(waiting.approval ? `approval ${JSON.stringify(chosen.answer)} answered via ${via ?? 'control'}` : undefined);
    return true;
  }

  /** Adds a person's decision to the task's `meta.approval_answers` (the last MAX_APPROVAL_ANSWERS). */
  private recordApproval(approval: NonNullable<AskMessage['approval']>, answer: string, via: string): void {
    const option = approval.options.find((candidate) => candidate.name === answer);
    const entry = {
      tool_call_id: approval.tool_call_id.slice(0, 120),
      option_id: (option?.option_id ?? answer).slice(0, 120),
      via,
      at: new Date().toISOString(),
    };
    const earlier = this.task.annotated?.[APPROVAL_ANSWERS_KEY];
    const list = [...(Array.isArray(earlier) ? earlier : []), entry].slice(-MAX_APPROVAL_ANSWERS);
    this.task.annotate({ [APPROVAL_ANSWERS_KEY]: list });
  }

  /** Forgets the question without replying (the task ended). */
  drop(): void {
    if (!this.waiting) return;
    clearTimeout(this.waiting.timer);
    this.waiting = undefined;
  }
}
