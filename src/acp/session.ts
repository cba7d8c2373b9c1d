/**
 * The session a run prompts: a new one, or for a follow-up the same one continued by `session/resume`
 * when the agent advertises it, else `session/load` (its replayed history is not this run's work),
 * else a new session whose first prompt replays the earlier transcript. Every wait is bounded.
 */
import { methods, type ClientConnection, type InitializeResponse, type McpServer } from '@agentclientprotocol/sdk';
import type { AgentProcess } from './agent-process.js';
import { AcpError, authMethodOf, bounded } from './connection.js';
import type { AcpSettings } from './settings.js';
import type { Work } from './work.js';

export type ContinuedBy = 'new' | 'resume' | 'load' | 'replay';

export interface OpenedSession {
  sessionId: string;
  continuedBy: ContinuedBy;
  /** For a replay: the earlier conversation, put before the first prompt. */
  preamble?: string;
}

/** JSON-RPC's "authentication required" (ACP). */
const AUTH_REQUIRED = -32000;
/** The longest transcript replayed into a new session's first prompt. */
const MAX_REPLAY_CHARS = 200_000;

interface Context {
  connection: ClientConnection;
  agent: AgentProcess;
  init: InitializeResponse;
  settings: AcpSettings;
  cwd: string;
  work: Work;
}

function mcpServers(settings: AcpSettings): McpServer[] {
  const bridge = settings.bridge?.mcpServer;
  if (!bridge) return [];
  const env = Object.entries(bridge.env ?? {}).map(([name, value]) => ({ name, value }));
  return [{ name: 'backchannel', command: bridge.command, args: bridge.args ?? [], env }];
}

export async function openSession(cx: Context): Promise<OpenedSession> {
  const earlier = cx.settings.session;
  if (earlier) {
    const caps = cx.init.agentCapabilities;
    if (caps?.sessionCapabilities?.resume && (await tryContinue(cx, 'resume', earlier.id)))
      return { sessionId: earlier.id, continuedBy: 'resume' };
    if (caps?.loadSession && (await tryContinue(cx, 'load', earlier.id))) return { sessionId: earlier.id, continuedBy: 'load' };
    const sessionId = await newSession(cx);
    return { sessionId, continuedBy: 'replay', preamble: replayText(earlier.transcript ?? []) };
  }
  return { sessionId: await newSession(cx), continuedBy: 'new' };
}

async function tryContinue(cx: Context, how: 'resume' | 'load', sessionId: string): Promise<boolean> {
  const limit = cx.settings.initTimeoutMs;
  const params = { sessionId, cwd: cx.cwd, mcpServers: mcpServers(cx.settings) };
  cx.work.replaying = how === 'load';
  try {
    const request =
      how === 'resume'
        ? cx.connection.agent.request(methods.agent.session.resume, params)
        : cx.connection.agent.request(methods.agent.session.load, params);
    await bounded(request, limit, `the ACP agent did not answer session/${how} within ${limit} ms`, cx.agent);
    // Replayed updates may still be in flight behind the answer: let them be read before the run's own.
    await new Promise((resolve) => setImmediate(resolve));
    return true;
  } catch (error) {
    if (error instanceof AcpError && error.code !== 'agent_error') throw error;
    process.stderr.write(`[backchannel-acp] session/${how} ${sessionId} failed (${(error as Error).message}); trying the next way\n`);
    return false;
  } finally {
    cx.work.replaying = false;
  }
}

async function newSession(cx: Context): Promise<string> {
  const limit = cx.settings.initTimeoutMs;
  const create = () =>
    bounded(
      cx.connection.agent.request(methods.agent.session.new, { cwd: cx.cwd, mcpServers: mcpServers(cx.settings) }),
      limit,
      `the ACP agent did not answer session/new within ${limit} ms`,
      cx.agent,
    );
  try {
    return (await create()).sessionId;
  } catch (error) {
    const method = authMethodOf(cx.init);
    if (!isAuthRequired(error) || method === undefined) throw error;
    await bounded(
      cx.connection.agent.request(methods.agent.authenticate, { methodId: method }),
      limit,
      `the ACP agent did not answer authenticate within ${limit} ms`,
      cx.agent,
    );
    return (await create()).sessionId;
  }
}

function isAuthRequired(error: unknown): boolean {
  return error instanceof AcpError && (error.rpcCode === AUTH_REQUIRED || /authenticat/i.test(error.message));
}

/** An earlier transcript as text: entries are strings or {role, text} (the adapter's own `data.transcript`). */
export function replayText(transcript: readonly unknown[]): string {
  const lines = transcript.map((entry) => {
    if (typeof entry === 'string') return entry;
    if (typeof entry === 'object' && entry !== null) {
      const e = entry as { role?: unknown; text?: unknown };
      if (typeof e.text === 'string') return `${typeof e.role === 'string' ? e.role : 'note'}: ${e.text}`;
    }
    return '';
  });
  const text = lines.filter(Boolean).join('\n').slice(-MAX_REPLAY_CHARS);
  return text ? `Earlier in this conversation:\n${text}\n\nContinue from there.\n\n` : '';
}
