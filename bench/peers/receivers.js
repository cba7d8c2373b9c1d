/**
 * Receiving ends for figure 3's peers. Each starts a sender child over one transport and resolves
 * when all `count` messages and the sender's `done` have arrived, with the receiver's CPU spent
 * between the first and the last message.
 */
import { fork, spawn } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { BASELINE_TASK_ID } from '../agents/stream-message.mjs';
import { agentPath } from '../lib/env.js';
import { lineSplitter } from '../lib/lines.js';
import { cpuMicros, wallNow } from '../lib/stats.js';

const require = createRequire(import.meta.url);
const SENDER = agentPath('stream-sender.mjs');

/** A transport still short of its count this long after its first message is cut off (partial result). */
export const DEADLINE_MS = 20_000;

/**
 * Counts messages; the first carries the sender's start time. Resolves when all arrived and the
 * sender reported its CPU, or at the deadline with what arrived by then (`partial: true`; the rate
 * is then the messages seen over the time to the last one).
 */
export function counter(count, deadlineMs = DEADLINE_MS) {
  let seen = 0;
  let c0 = 0;
  let lastAt = 0;
  let result = {};
  let resolve;
  let deadline;
  const finished = new Promise((r) => (resolve = r));
  const check = () => {
    if (seen >= count && result.childCpu !== undefined) {
      clearTimeout(deadline);
      resolve(result);
    }
  };
  return {
    finished,
    message(value) {
      if (value.done) {
        result.childCpu = value.cpu;
        return check();
      }
      if (value.status !== 'partial') return;
      if (seen === 0) {
        c0 = cpuMicros();
        result.sentAt = value.data.sent_at;
        deadline = setTimeout(() => {
          result = { ...result, partial: true, seen, lastAt, cpu: cpuMicros() - c0, childCpu: Number.NaN };
          resolve(result);
        }, deadlineMs);
      }
      seen += 1;
      lastAt = wallNow();
      if (seen === count) {
        result.seen = seen;
        result.lastAt = lastAt;
        result.cpu = cpuMicros() - c0;
        check();
      }
    },
    /** For senders that report their CPU some other way (the broker's agent). */
    childCpu(cpu) {
      result.childCpu = cpu;
      check();
    },
  };
}

function stopIfPartial(child, result) {
  if (result.partial) child.kill('SIGKILL');
  return result;
}

function waitExit(child) {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', resolve)));
}

function childOptions(socketPath) {
  return { env: { ...process.env, BENCH_SOCKET: socketPath }, stdio: ['ignore', 'pipe', 'inherit'] };
}

async function listen(server, socketPath) {
  await new Promise((resolve) => server.listen(socketPath, resolve));
  return () => new Promise((resolve) => server.close(resolve));
}

/** Raw Unix socket + hand-written splitter (transport: socket-coalesced | socket-single). */
export async function rawSocket(transport, count, burst, dir) {
  const socketPath = path.join(dir, `${transport}.sock`);
  const c = counter(count);
  const server = createServer((socket) => {
    socket.setEncoding('utf8');
    socket.on('data', lineSplitter(c.message));
  });
  const close = await listen(server, socketPath);
  const child = spawn(process.execPath, [SENDER, transport, count, burst], childOptions(socketPath));
  const result = await stopIfPartial(child, await c.finished);
  await waitExit(child);
  await close();
  return result;
}

/**
 * The raw socket again (same sender, same lines), read the broker's way: its LineDecoder and its
 * inbound pipeline per line (JSON.parse, the token taken out, the message validated, the task id
 * checked) — what a validated stream costs at least, without a task, an update event or a journal.
 * Figure 3's `(limit)` row.
 */
export async function rawValidated(count, burst, dir) {
  const { LineDecoder } = await import('../../dist/protocol/index.js');
  const { readInbound } = await import('../../dist/broker/transport/inbound.js');
  const socketPath = path.join(dir, 'validated.sock');
  const c = counter(count);
  const server = createServer((socket) => {
    const decoder = new LineDecoder({
      line(text) {
        const inbound = readInbound(text, BASELINE_TASK_ID, 'socket');
        // The sender's closing `done` line is no protocol message.
        c.message(inbound.ok ? inbound.message : JSON.parse(text));
      },
      overflow() {},
    });
    socket.on('data', (chunk) => decoder.push(chunk));
  });
  const close = await listen(server, socketPath);
  const child = spawn(process.execPath, [SENDER, 'socket-coalesced', count, burst], childOptions(socketPath));
  const result = await stopIfPartial(child, await c.finished);
  await waitExit(child);
  await close();
  return result;
}

/** The child's stdout pipe, NDJSON, one write per message on the sender side. */
export async function stdoutNdjson(count, burst) {
  const c = counter(count);
  const child = spawn(process.execPath, [SENDER, 'stdout', count, burst], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', lineSplitter(c.message));
  const result = await stopIfPartial(child, await c.finished);
  await waitExit(child);
  return result;
}

/** Node's fork() IPC channel, `json` or `advanced` (structured clone) serialization. */
export async function forkIpc(serialization, count, burst) {
  const c = counter(count);
  const child = fork(SENDER, ['ipc', String(count), String(burst)], { serialization, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  child.on('message', c.message);
  const result = await stopIfPartial(child, await c.finished);
  await waitExit(child);
  return result;
}

/** vscode-jsonrpc notifications over a Unix socket (Content-Length framing). */
export async function jsonRpc(count, burst, dir) {
  const rpc = require('vscode-jsonrpc/node');
  const socketPath = path.join(dir, 'jsonrpc.sock');
  const c = counter(count);
  const server = createServer((socket) => {
    const connection = rpc.createMessageConnection(new rpc.SocketMessageReader(socket), new rpc.SocketMessageWriter(socket));
    connection.onNotification('partial', c.message);
    connection.onNotification('done', c.message);
    connection.listen();
    socket.on('close', () => connection.dispose());
  });
  const close = await listen(server, socketPath);
  const child = spawn(process.execPath, [SENDER, 'jsonrpc', count, burst], childOptions(socketPath));
  const result = await stopIfPartial(child, await c.finished);
  await waitExit(child);
  await close();
  return result;
}

/** `ws` WebSocket over a Unix socket, one text frame per message. */
export async function webSocket(count, burst, dir) {
  const { WebSocketServer } = await import('ws');
  const socketPath = path.join(dir, 'ws.sock');
  const c = counter(count);
  const http = createHttpServer();
  const wss = new WebSocketServer({ server: http });
  wss.on('connection', (ws) => ws.on('message', (data) => c.message(JSON.parse(data))));
  const close = await listen(http, socketPath);
  const child = spawn(process.execPath, [SENDER, 'ws', count, burst], childOptions(socketPath));
  const result = await stopIfPartial(child, await c.finished);
  await waitExit(child);
  wss.close();
  await close();
  return result;
}
