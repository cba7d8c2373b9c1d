/**
 * Questions to the person, one at a time: the broker keeps at most one question waiting per task
 * and refuses a second at once, while an ACP agent may ask several permissions in parallel (parallel
 * tool calls). Each question waits its turn; one whose caller gave up (its turn was cancelled) while
 * it waited is never asked.
 */
import type { AgentTask, AskOptions } from '../agent-runtime/index.js';

/** Questions waiting their turn at most: an agent flooding permission requests gets the rest refused (rejected, unanswered). */
export const MAX_WAITING_QUESTIONS = 32;

export type AskResult = { answer: string } | { unanswered: true } | { cancelled: true };

export class Asker {
  private queue: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(private readonly task: AgentTask) {}

  /** Asks once the questions before it are settled: the answer, unanswered (timeout, no answer) or cancelled. */
  ask(question: string, options: AskOptions, signal?: AbortSignal): Promise<AskResult> {
    if (this.waiting >= MAX_WAITING_QUESTIONS) return Promise.resolve({ unanswered: true });
    this.waiting++;
    let result!: (value: AskResult) => void;
    const answered = new Promise<AskResult>((resolve) => (result = resolve));
    // The queue waits for the broker's question to settle, not for its caller: a question whose turn was
    // cancelled stays open at the broker (there is no withdrawing it) until answered or timed out, and a
    // next question sent before then would be refused at once.
    this.queue = this.queue.then(() => this.askNow(question, options, signal, result)).finally(() => this.waiting--);
    return answered;
  }

  /** Asks; `result` gets the outcome as soon as it is known (a cancel), the promise settles with the broker's question. */
  private async askNow(
    question: string,
    options: AskOptions,
    signal: AbortSignal | undefined,
    result: (value: AskResult) => void,
  ): Promise<void> {
    const gaveUp = () => this.task.signal.aborted || signal?.aborted === true;
    if (gaveUp()) return result({ cancelled: true });
    signal?.addEventListener('abort', () => result({ cancelled: true }), { once: true });
    const outcome = await this.task.ask(question, options).then(
      (answer): AskResult => ({ answer }),
      (): AskResult => (gaveUp() ? { cancelled: true } : { unanswered: true }),
    );
    result(outcome);
  }
}
