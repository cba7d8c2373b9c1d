/**
 * The gateway's session registry: which agent session a client's conversation continues.
 *
 * - A key comes from the client's own session identifiers (Claude Code's `X-Claude-Code-Session-Id`
 *   and `metadata.user_id`, OpenCode/Kilo/Grok session headers, `conversation`, `prompt_cache_key`),
 *   else from the first substantive user text; with the model name and a purpose (`main`, `side`).
 *   Only its SHA-256 (32 hex) is kept — never conversation text, and nothing is written to disk.
 * - At most `max` sessions (LRU) and `idleMs` of idleness each; a session with a request in flight is
 *   never evicted. `onRelease` hears of every session that leaves.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ChatMessage } from './request.js';

/** Session headers real clients send, most specific first. */
export const SESSION_HEADERS = [
  'x-claude-code-session-id',
  'x-opencode-session',
  'x-session-id',
  'x-session-affinity',
  'x-conversation-id',
];

export interface Session {
  /** 32 hex characters. */
  readonly key: string;
  /** The agent's own session id (from its result), to resume. */
  agentSession?: string;
  inFlight: number;
  lastUsed: number;
}

/** The client's session identifiers from its headers, most specific first. */
export function headerSessionIds(headers: IncomingHttpHeaders): string[] {
  return SESSION_HEADERS.map((name) => headers[name])
    .map((value) => (Array.isArray(value) ? value[0] : value))
    .filter((value): value is string => typeof value === 'string' && value.trim() !== '');
}

/** The key of a conversation: its first client id, else its first substantive user text. */
export function sessionKey(ids: string[], messages: ChatMessage[], model: string, purpose: 'main' | 'side'): string | undefined {
  const first = ids[0] ?? messages.find((m) => m.role === 'user' && m.content.trim().length >= 2)?.content;
  if (first === undefined) return undefined;
  return createHash('sha256').update(`${purpose}\0${model}\0${first}`).digest('hex').slice(0, 32);
}

export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly max: number,
    private readonly idleMs: number,
    private readonly onRelease: (session: Session) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** The session for `key` (made if new), marked in flight until `release`. Undefined when sessions are off. */
  acquire(key: string): Session | undefined {
    if (this.max === 0) return undefined;
    this.sweep();
    let session = this.sessions.get(key);
    if (session) this.sessions.delete(key); // re-insert: the Map's order is the LRU order
    session ??= { key, inFlight: 0, lastUsed: this.now() };
    session.inFlight += 1;
    session.lastUsed = this.now();
    this.sessions.set(key, session);
    this.evictOverCap();
    return session;
  }

  /** The request is done; `agentSession` (if any) is what the next turn resumes. */
  done(session: Session, agentSession: string | undefined): void {
    session.inFlight -= 1;
    session.lastUsed = this.now();
    if (agentSession !== undefined) session.agentSession = agentSession;
    this.evictOverCap();
  }

  /** Removes idle sessions past their TTL. */
  sweep(): void {
    const limit = this.now() - this.idleMs;
    for (const session of [...this.sessions.values()]) if (session.inFlight === 0 && session.lastUsed < limit) this.remove(session);
  }

  /** Releases every session (the gateway closes). */
  clear(): void {
    for (const session of [...this.sessions.values()]) this.remove(session);
  }

  private evictOverCap(): void {
    for (const session of [...this.sessions.values()]) {
      if (this.sessions.size <= this.max) return;
      if (session.inFlight === 0) this.remove(session);
    }
  }

  private remove(session: Session): void {
    this.sessions.delete(session.key);
    this.onRelease(session);
  }
}
