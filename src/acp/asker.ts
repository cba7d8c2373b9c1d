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

  /** Asks once the questions before it are answered: the answer, unanswered (timeout, no answer) or cancelled. */
  ask(question: string, options: AskOptions, signal?: AbortSignal): Promise<AskResult> {
    if (this.waiting >= MAX_WAITING_QUESTIONS) return Promise.resolve({ unanswered: true });
    this.waiting++;
    const turn = this.queue.then(() => this.askNow(question, options, signal)).finally(() => this.waiting--);
    this.queue = turn.catch(() => {});
    return turn;
  }

  private async askNow(question: string, options: AskOptions, signal?: AbortSignal): Promise<AskResult> {
    const gaveUp = () => this.task.signal.aborted || signal?.aborted === true;
    if (gaveUp()) return { cancelled: true };
    const cancelled = new Promise<AskResult>((resolve) =>
      signal?.addEventListener('abort', () => resolve({ cancelled: true }), { once: true }),
    );
    const asked = this.task.ask(question, options).then(
      (answer): AskResult => ({ answer }),
      (): AskResult => (gaveUp() ? { cancelled: true } : { unanswered: true }),
    );
    return Promise.race([asked, cancelled]);
  }
}
