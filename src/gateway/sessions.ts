/**
 * The gateway's session registry: which agent session a client's conversation continues.
 *
 * - The client's own session identifiers (Claude Code's `X-Claude-Code-Session-Id` and
 *   `metadata.user_id`, OpenCode/Kilo/Grok session headers, `conversation`, `prompt_cache_key`)
 *   name a session: the same id, the same session.
 * - Without one, a request continues a session only when the history it sends (up to its last
 *   assistant message) is that session's own transcript: what the session was asked and answered.
 *   A conversation that starts (no assistant message yet) always gets a new session, so two
 *   conversations that begin with the same words never share an agent session or a workspace.
 * - Keys and transcripts are SHA-256 hashes (32 hex), with the model name and a purpose (`main`,
 *   `side`); never conversation text, and nothing is written to disk. A session without a client id
 *   gets a random key.
 * - At most `max` sessions (LRU) and `idleMs` of idleness each; a session with a request in flight is
 *   never evicted. `onRelease` hears of every session that leaves.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ChatMessage } from './request.js';
import type { SessionWorktree } from './session-worktree.js';
import type { GuardCounts } from './bridge/guard.js';

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
  /** Named by the client's own id (else found by its transcript). */
  readonly byClientId: boolean;
  /** The agent's own session id (from its result), to resume. */
  agentSession?: string;
  /** Hash of the conversation so far (`transcriptHash`), set after each answer. */
  transcript?: string;
  /** The worktree its turns share (a `worktree: true` model); it outlives the session, as any task's does. */
  worktree?: SessionWorktree;
  /** Its bridged run (./bridged-run.ts), while one is alive (it holds the session in flight). */
  bridge?: SessionRun;
  /** The scratch-path guard's counts (bridge mode). */
  guard?: GuardCounts;
  inFlight: number;
  lastUsed: number;
}

/** What a session knows of its bridged run. */
export interface SessionRun {
  readonly state: 'running' | 'suspended' | 'ended';
  retire(): Promise<void>;
}

/** How a request finds its session: by the client's id, else by the history it continues. */
export interface SessionClaim {
  /** From the client's first session id. */
  clientKey?: string;
  /** `transcriptHash` of the messages up to the last assistant one; absent when there is none. */
  history?: string;
}

/** The client's session identifiers from its headers, most specific first. */
export function headerSessionIds(headers: IncomingHttpHeaders): string[] {
  return SESSION_HEADERS.map((name) => headers[name])
    .map((value) => (Array.isArray(value) ? value[0] : value))
    .filter((value): value is string => typeof value === 'string' && value.trim() !== '');
}

/** Who is asking, as the hash prefix of keys and transcripts: another model or purpose is another session. */
const scope = (model: string, purpose: 'main' | 'side') => `${purpose}\0${model}\0`;

const hash32 = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

/**
 * A conversation's user and assistant turns as one hash (system prompts, which clients rewrite
 * between turns, are not part of it; whitespace at either end of a message is not either).
 */
export function transcriptHash(messages: ChatMessage[], model: string, purpose: 'main' | 'side'): string {
  const turns = messages.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => [m.role, m.content.trim()]);
  return hash32(scope(model, purpose) + JSON.stringify(turns));
}

/** How this request finds its session: its first client id, else the history before its new turn. */
export function sessionClaim(ids: string[], messages: ChatMessage[], model: string, purpose: 'main' | 'side'): SessionClaim {
  if (ids[0] !== undefined) return { clientKey: hash32(`${scope(model, purpose)}id\0${ids[0]}`) };
  const last = messages.map((m) => m.role).lastIndexOf('assistant');
  return last < 0 ? {} : { history: transcriptHash(messages.slice(0, last + 1), model, purpose) };
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

  /**
   * The session this request continues (made if none), marked in flight until `done`: the client
   * id's, else an idle session whose transcript is the request's history. Undefined when sessions are off.
   */
  acquire(claim: SessionClaim): Session | undefined {
    if (this.max === 0) return undefined;
    this.sweep();
    const key = claim.clientKey;
    let session = key === undefined ? this.continued(claim.history) : this.sessions.get(key);
    if (session) this.sessions.delete(session.key); // re-insert: the Map's order is the LRU order
    session ??= { key: key ?? randomBytes(16).toString('hex'), byClientId: key !== undefined, inFlight: 0, lastUsed: this.now() };
    session.inFlight += 1;
    session.lastUsed = this.now();
    this.sessions.set(session.key, session);
    this.evictOverCap();
    return session;
  }

  /** Another holder of a session in flight (a bridged run, until it ends); released with `done`. */
  hold(session: Session): void {
    session.inFlight += 1;
    session.lastUsed = this.now();
  }

  /**
   * The request is done; `agentSession` (if any) is what the next turn resumes, `transcript` (if it
   * was answered) what the next turn's history must be.
   */
  done(session: Session, agentSession: string | undefined, transcript?: string): void {
    session.inFlight -= 1;
    session.lastUsed = this.now();
    if (agentSession !== undefined) session.agentSession = agentSession;
    if (transcript !== undefined) session.transcript = transcript;
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

  /** An idle session found by its transcript (one in flight is answering another copy of the conversation). */
  private continued(history: string | undefined): Session | undefined {
    if (history === undefined) return undefined;
    for (const session of this.sessions.values()) {
      if (!session.byClientId && session.inFlight === 0 && session.transcript === history) return session;
    }
    return undefined;
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
