/**
 * One payload on a fresh connection, for callers that are not a running `AgentTask`
 * (`backchannel send` from a sub-agent's shell, a hook script). Waits for the broker's verdict.
 */
import { isFinalStatus, type BrokerMessage, type Payload } from '../protocol/index.js';
import { connectWithRetry, MessageLink } from './connection.js';

/** How long to wait for the broker's `ack`/`welcome` before giving up. */
const CONFIRM_TIMEOUT_MS = 5000;

export type SendOutcome = { delivered: true } | { delivered: false; reason: string };

/**
 * Connects to `ipcPath`, sends `payload` (authenticated with `token` when given) and resolves once the
 * broker confirmed it: `ack` for a final payload, `welcome` (sent after the first line is read) otherwise.
 * Rejects only when the socket cannot be reached at all (the caller then falls back to stdout).
 */
export async function sendOnce(ipcPath: string, payload: Payload, token?: string): Promise<SendOutcome> {
  const socket = await connectWithRetry(ipcPath, { retries: 5 });
  const final = isFinalStatus(payload.status);
  const outcome = await new Promise<BrokerMessage | 'closed'>((resolve) => {
    const link = new MessageLink(socket, (message) => {
      if (message.type === 'reject') resolve(message);
      if (message.type === 'ack' || (!final && message.type === 'welcome')) resolve(message);
    });
    void link.whenClosed().then(() => resolve('closed'));
    link.send(token ? { ...payload, token } : payload);
    setTimeout(() => resolve('closed'), CONFIRM_TIMEOUT_MS).unref();
  });
  socket.end();
  if (outcome === 'closed')
    return { delivered: false, reason: 'the broker closed the connection without confirming (is the task still running?)' };
  if (outcome.type === 'reject') return { delivered: false, reason: `rejected by the broker: ${outcome.reason}` };
  return { delivered: true };
}
