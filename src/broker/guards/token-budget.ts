/**
 * The design's token bucket in front of task starts: acquire an estimate before a task starts, settle
 * with the reported `meta.token_usage` after, and hold starts while the bucket is low.
 */
export interface TokenBudgetOptions {
  /** Bucket size in tokens. */
  capacity: number;
  /** Tokens added back per second. */
  refillPerSecond: number;
}

export class TokenBudget {
  private level: number;
  private lastRefill = Date.now();
  private waiters: Array<{ amount: number; resolve: () => void; timer?: NodeJS.Timeout }> = [];

  constructor(private readonly options: TokenBudgetOptions) {
    this.level = options.capacity;
  }

  get available(): number {
    this.refill();
    return this.level;
  }

  /** Waits until `amount` tokens are available (an estimate bigger than the bucket waits for a full bucket). */
  async acquire(amount: number, signal?: AbortSignal): Promise<void> {
    const need = Math.min(Math.max(0, amount), this.options.capacity);
    this.refill();
    if (this.waiters.length === 0 && this.level >= need) {
      this.level -= need;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = { amount: need, resolve };
      this.waiters.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          reject(signal.reason);
        },
        { once: true },
      );
      this.schedule();
    });
  }

  /** Corrects the estimate with what was really spent (positive: spent more; negative: refund). */
  settle(estimated: number, actual: number): void {
    this.refill();
    this.level = Math.min(this.options.capacity, this.level - (actual - estimated));
    this.schedule();
  }

  private refill(): void {
    const now = Date.now();
    this.level = Math.min(this.options.capacity, this.level + ((now - this.lastRefill) / 1000) * this.options.refillPerSecond);
    this.lastRefill = now;
  }

  private schedule(): void {
    this.refill();
    while (this.waiters.length > 0 && this.level >= this.waiters[0]!.amount) {
      const waiter = this.waiters.shift()!;
      this.level -= waiter.amount;
      waiter.resolve();
    }
    const head = this.waiters[0];
    if (head && this.options.refillPerSecond > 0) {
      const waitMs = Math.ceil(((head.amount - this.level) / this.options.refillPerSecond) * 1000);
      setTimeout(() => this.schedule(), Math.max(10, waitMs)).unref();
    }
  }
}

/** Total tokens in a `meta.token_usage` object, whatever names the agent used. */
export function tokensUsed(usage: unknown): number | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  if (typeof u.total === 'number') return u.total;
  if (typeof u.total_tokens === 'number') return u.total_tokens;
  const sum = num(u.input) + num(u.output) + num(u.prompt_tokens) + num(u.completion_tokens) + num(u.input_tokens) + num(u.output_tokens);
  return sum > 0 ? sum : undefined;
}
