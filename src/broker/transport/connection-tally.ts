/**
 * What this process's task endpoints refused or failed to accept, counted since it started: every
 * connection refused (too many, no or wrong token, bad first line, no first line in time) and every
 * accept error (`endpoint error: …`, e.g. EMFILE). Each attempt's own tally (task/tally.ts) puts its
 * share in its failure message; these totals are shown by `stats()`, the bridge's `info` and the
 * gateway's `/health`, so a lost result can be told apart from a connection that never got in.
 */
export interface ConnectionTally {
  /** Connections closed before their agent was heard. */
  refused: number;
  /** Errors of the listening endpoints themselves (the kernel could not hand over a connection). */
  acceptErrors: number;
  /** The last accept error's message. */
  lastAcceptError?: string;
}

const tally: ConnectionTally = { refused: 0, acceptErrors: 0 };

export function countRefused(): void {
  tally.refused += 1;
}

export function countAcceptError(message: string): void {
  tally.acceptErrors += 1;
  tally.lastAcceptError = message;
}

/** A copy of the totals. */
export function connectionTally(): ConnectionTally {
  return { ...tally };
}
