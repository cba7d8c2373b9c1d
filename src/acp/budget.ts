/**
 * The cost caps the adapter holds when `onBudget` is "pause" (the default): over a cap, the run
 * cancels the turn, keeps the session and asks "budget reached ($X of $Y): raise the cap / stop";
 * raising adds the first cap again and the same session goes on. Silence spends nothing: no answer
 * stops. With "stop" the broker's own guard ends the task, and this class holds no cap.
 */
import type { Asker } from './asker.js';
import type { AcpSettings } from './settings.js';
import type { Work } from './work.js';

const dollars = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2).replace(/\.?0+$/, '')}`;

export class Budget {
  private costCap: number | undefined;
  private tokenCap: number | undefined;
  /** Raises so far (each adds the first cap again). */
  raises = 0;

  constructor(private readonly settings: AcpSettings) {
    if (settings.onBudget === 'pause') {
      this.costCap = settings.maxCostUsd;
      this.tokenCap = settings.maxTokens;
    }
  }

  /** "$0.6 of $0.5" when the work is at or over a cap, else undefined. */
  reached(work: Work): string | undefined {
    if (this.costCap !== undefined && work.costUsd !== undefined && work.costUsd >= this.costCap) {
      return `${dollars(work.costUsd)} of ${dollars(this.costCap)}`;
    }
    const tokens = work.tokens.input + work.tokens.output;
    if (this.tokenCap !== undefined && tokens >= this.tokenCap) return `${tokens} tokens of ${this.tokenCap}`;
    return undefined;
  }

  /** Asks the person; true when the cap was raised (and is now higher), false to stop. */
  async askToRaise(asker: Asker, figure: string): Promise<boolean> {
    const raise = this.raiseLabel();
    const result = await asker.ask(`budget reached (${figure}): raise the cap / stop`, { choices: [raise, 'stop'] });
    if (!('answer' in result)) return false;
    const a = result.answer.trim().toLowerCase();
    if (a !== raise.toLowerCase() && a !== '1' && !a.startsWith('raise')) return false;
    this.raises++;
    if (this.costCap !== undefined && this.settings.maxCostUsd !== undefined) this.costCap += this.settings.maxCostUsd;
    if (this.tokenCap !== undefined && this.settings.maxTokens !== undefined) this.tokenCap += this.settings.maxTokens;
    return true;
  }

  private raiseLabel(): string {
    if (this.settings.maxCostUsd !== undefined) return `raise by ${dollars(this.settings.maxCostUsd)}`;
    return `raise by ${this.settings.maxTokens ?? 0} tokens`;
  }

  caps(): Record<string, number> {
    return {
      ...(this.costCap !== undefined ? { max_cost_usd: this.costCap } : {}),
      ...(this.tokenCap !== undefined ? { max_tokens: this.tokenCap } : {}),
    };
  }
}
