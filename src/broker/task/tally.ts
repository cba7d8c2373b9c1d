/**
 * What went wrong on an attempt's channels, counted, so that a failure says it: "1 connection
 * rejected: no token on its first line" instead of only "exited without sending a final payload".
 */
export class ChannelTally {
  private readonly refusals = new Map<string, number>();
  private malformedLines = 0;
  private lastMalformed = '';
  private acceptErrors = 0;
  private lastAcceptError = '';

  refused(reason: string): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
  }

  /** The endpoint could not accept a connection (the agent's may be the one lost). */
  acceptError(message: string): void {
    this.acceptErrors += 1;
    this.lastAcceptError = message;
  }

  malformed(detail: string): void {
    this.malformedLines += 1;
    this.lastMalformed = detail;
  }

  /** "; 2 connections rejected: wrong token ×2; 1 malformed line ignored (…)", or '' when all was well. */
  describe(): string {
    const parts: string[] = [];
    const total = [...this.refusals.values()].reduce((sum, n) => sum + n, 0);
    if (total > 0) {
      const reasons = [...this.refusals].map(([reason, n]) => (n > 1 ? `${reason} ×${n}` : reason));
      parts.push(`${total} connection${total > 1 ? 's' : ''} rejected: ${reasons.join(', ')}`);
    }
    if (this.acceptErrors > 0) {
      const s = this.acceptErrors > 1 ? 's' : '';
      parts.push(`${this.acceptErrors} accept error${s} on its endpoint (last: ${this.lastAcceptError.slice(0, 120)})`);
    }
    if (this.malformedLines > 0) {
      const s = this.malformedLines > 1 ? 's' : '';
      parts.push(`${this.malformedLines} malformed line${s} ignored (last: ${this.lastMalformed.slice(0, 120)})`);
    }
    return parts.map((part) => `; ${part}`).join('');
  }
}
