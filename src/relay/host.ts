/**
 * The agent's side of the stdio MCP relay: `openToolRelay(task)` opens a private relay socket and
 * says how to start the relay (server.ts) so that a coding CLI (Claude Code, the Cursor CLI, Codex)
 * sees the task's offered tools as MCP tools, and each call it makes becomes a protocol tool call
 * (`task.callTool`) answered by whoever started the task.
 *
 * Guarantees:
 * - the socket lives in a directory of its own, created 0700 (`mkdtemp`), so no other user can reach
 *   it; `close()` ends every connection, aborts the calls still in flight and removes the directory;
 * - the task's token never leaves this process: the relay gets only the socket's path (argv), the
 *   CLI only the command line that starts the relay (`command`, `args`, `mcpConfig`);
 * - the relay lists exactly `task.tools`; a call is forwarded once, with its arguments as given, and
 *   its answer (content, or an error as a one-line message) goes back whole, however big;
 * - a relay that disconnects (the CLI stopped it) aborts its calls in flight;
 * - a line of another shape than wire.ts declares is dropped.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LineDecoder, encodeLine, parseLine } from '../protocol/index.js';
import { RELAY_SERVER_NAME, RelayRequest, type RelayTool } from './wire.js';

/** What the relay needs of a task: the SDK's `AgentTask` (task.tools, task.callTool) has it. */
export interface ToolHost {
  readonly tools?: readonly RelayTool[];
  callTool(name: string, args: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<unknown>;
  readonly signal?: AbortSignal;
}

export interface ToolRelay {
  /** The private 0700 directory (the socket, and config files a template writes there). */
  readonly dir: string;
  readonly socketPath: string;
  /** How to start the relay: `command` with `args` (node, the relay script, the socket path). */
  readonly command: string;
  readonly args: readonly string[];
  /** The MCP server's name in the CLI's config (`backchannel`). */
  readonly serverName: string;
  /** `{"mcpServers": {"backchannel": {"command", "args"}}}`: Claude Code's `--mcp-config`, Cursor's `.cursor/mcp.json`. */
  readonly mcpConfig: { mcpServers: Record<string, { command: string; args: string[] }> };
  /** Calls forwarded so far. */
  readonly calls: number;
  /** Calls forwarded and not answered yet. */
  readonly inFlight: number;
  close(): Promise<void>;
}

/** The relay script beside this file: server.js when built, server.ts (run through tsx) from source. */
function relayCommand(socketPath: string): { command: string; args: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    // By URL: the CLI starts the relay in its own working directory, where `tsx` may not resolve.
    return {
      command: process.execPath,
      args: ['--import', import.meta.resolve('tsx'), path.join(path.dirname(here), 'server.ts'), socketPath],
    };
  }
  return { command: process.execPath, args: [path.join(path.dirname(here), 'server.js'), socketPath] };
}

/** sun_path is 104 bytes on macOS and 108 on Linux, one kept for the terminator (the broker's transport says the same). */
const MAX_SOCKET_PATH_BYTES = process.platform === 'darwin' ? 103 : 107;
const SOCKET_NAME = 'relay.sock';
/** `bc-relay-` and the six characters mkdtemp adds, a separator, the socket's name. */
const SUFFIX_BYTES = 'bc-relay-XXXXXX'.length + 1 + SOCKET_NAME.length + 1;

/**
 * Where the private directory goes: the temporary directory, or `/tmp` when that one is too long for
 * a socket path (macOS's `/private/var/folders/…`, a deep TMPDIR). mkdtemp makes it 0700 either way.
 */
function relayParent(): string {
  const tmp = fs.realpathSync(os.tmpdir());
  if (Buffer.byteLength(tmp) + SUFFIX_BYTES <= MAX_SOCKET_PATH_BYTES || process.platform === 'win32') return tmp;
  return '/tmp';
}

export async function openToolRelay(task: ToolHost): Promise<ToolRelay> {
  const tools = [...(task.tools ?? [])];
  const dir = fs.mkdtempSync(path.join(relayParent(), 'bc-relay-'));
  fs.chmodSync(dir, 0o700);
  const socketPath = path.join(dir, SOCKET_NAME);
  const sockets = new Set<net.Socket>();
  const counts: RelayCounts = { calls: 0, inFlight: 0 };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(socket, task, tools, counts);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  fs.chmodSync(socketPath, 0o600);

  const { command, args } = relayCommand(socketPath);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    })());
  task.signal?.addEventListener('abort', () => void close(), { once: true });

  return {
    dir,
    socketPath,
    command,
    args,
    serverName: RELAY_SERVER_NAME,
    mcpConfig: { mcpServers: { [RELAY_SERVER_NAME]: { command, args } } },
    get calls() {
      return counts.calls;
    },
    get inFlight() {
      return counts.inFlight;
    },
    close,
  };
}

/** How many calls a relay has had, and how many still run. */
interface RelayCounts {
  calls: number;
  inFlight: number;
}

/** One MCP server's connection to the relay: its `list`, `call` and `cancel` requests, each answered in a line. */
function serveConnection(socket: net.Socket, task: ToolHost, tools: RelayTool[], counts: RelayCounts): void {
  const inFlight = new Map<number, AbortController>();
  const send = (answer: unknown) => {
    if (!socket.destroyed) socket.write(encodeLine(answer));
  };
  const decoder = new LineDecoder({
    line(text) {
      const parsed = parseLine(text);
      const request = parsed.ok ? RelayRequest.safeParse(parsed.value) : undefined;
      if (!request?.success) return;
      const message = request.data;
      if (message.op === 'list') return send({ id: message.id, tools });
      if (message.op === 'cancel') return inFlight.get(message.id)?.abort(new Error('the MCP client cancelled the call'));
      const controller = new AbortController();
      inFlight.set(message.id, controller);
      counts.calls += 1;
      counts.inFlight += 1;
      task
        .callTool(message.name, message.arguments, { signal: controller.signal })
        .then(
          (content) => send({ id: message.id, content: content ?? null }),
          (error: unknown) => send({ id: message.id, error: oneLine(error) }),
        )
        .finally(() => {
          counts.inFlight -= 1;
          inFlight.delete(message.id);
        });
    },
    overflow() {
      socket.destroy();
    },
  });
  socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  socket.on('error', () => {});
  socket.on('close', () => {
    for (const controller of inFlight.values()) controller.abort(new Error('the relay disconnected'));
  });
}

/** The caller's error as one line, without the SDK's own prefix (the model reads it as the tool's answer). */
function oneLine(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).replace(/^tool call (?:\S+ )?failed: /, '');
  return message.replace(/\s+/g, ' ').trim() || 'the tool call failed';
}
