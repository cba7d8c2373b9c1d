#!/usr/bin/env node
/**
 * Raw-protocol sub-agent in plain JavaScript, no dependencies: the reference for writing a sub-agent
 * in any language (docs/protocol.md). It does what templates/basic does — survey a directory — but
 * speaks the wire protocol itself: connect, hello with token, read input, heartbeat, progress, one
 * final payload, wait for the ack. Without a socket it prints `data:` lines on stdout instead. The
 * list of files goes back as an attachment (docs/protocol.md §4.1): raw bytes after the final line on
 * the socket, base64 inside it on stdout.
 *
 * Run it:   npx backchannel run --input '{"path":"src"}' -- node templates/raw-node/agent.mjs
 */
import { createConnection } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// 1. Task id: argv first (frameworks may wipe the environment), then the environment.
const taskId = process.argv.find((a) => a.startsWith('--task-id='))?.slice('--task-id='.length) || process.env.CURSOR_TASK_ID;
if (!taskId) {
  console.error('No task id (--task-id= or CURSOR_TASK_ID). Run me under `backchannel run`.');
  process.exit(2);
}
const ipcPath = process.env.CURSOR_IPC_PATH;
const token = process.env.CURSOR_IPC_TOKEN;
const heartbeatMs = Number(process.env.CURSOR_HEARTBEAT_MS) || 0;
const started = Date.now();

// 2. Connect with bounded retry; on failure fall back to stdout.
function connect(retries = 20, delay = 25) {
  return new Promise((resolve) => {
    if (!ipcPath || !token) return resolve(null);
    const socket = createConnection(ipcPath);
    socket.once('connect', () => resolve(socket));
    socket.once('error', (error) => {
      if (retries > 0 && ['ENOENT', 'ECONNREFUSED'].includes(error.code)) {
        setTimeout(() => connect(retries - 1, Math.min(500, delay * 2)).then(resolve), delay);
      } else {
        resolve(null);
      }
    });
  });
}

const socket = await connect();
let input = null;
let cancelled = null;
let onAck = () => {};

function send(message) {
  const line = JSON.stringify(message) + '\n';
  if (socket && !socket.destroyed) socket.write(line);
  else process.stdout.write(`data: ${JSON.stringify(message)}\n\n`);
}

if (socket) {
  // 3. Read broker messages line by line (one decoder, so split UTF-8 stays whole).
  let buffered = '';
  socket.setEncoding('utf8');
  const gotInput = new Promise((resolve) => {
    socket.on('data', (chunk) => {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          continue;
        }
        if (message.type === 'input') {
          input = message.data;
          resolve();
        } else if (message.type === 'cancel') cancelled = message.reason;
        else if (message.type === 'ack') onAck();
        else if (message.type === 'reject') console.error(`rejected: ${message.reason}`);
      }
    });
    socket.on('close', resolve);
  });
  // 4. Authenticate with the first line.
  send({ type: 'hello', task_id: taskId, token, agent: 'raw-node-template' });
  await gotInput;
}

const heartbeat = heartbeatMs > 0 ? setInterval(() => send({ task_id: taskId, status: 'heartbeat' }), heartbeatMs) : null;

// 5. The work.
function survey(root, limit) {
  const files = [];
  const pending = [root];
  while (pending.length && files.length < limit) {
    const dir = pending.pop();
    for (const entry of orGone(() => readdirSync(dir, { withFileTypes: true })) ?? []) {
      if (['node_modules', '.git', 'dist'].includes(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) pending.push(full);
      else if (entry.isFile()) files.push(full);
    }
  }
  return files;
}

/** A directory or file that vanished between its listing and its reading (a live tree) is skipped: undefined. */
function orGone(read) {
  try {
    return read();
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** `attachments`: [{ name, text }] — big values kept out of the JSON line. */
async function finish(status, data, attachments = []) {
  clearInterval(heartbeat);
  const payload = { task_id: taskId, status, data, meta: { timestamp: new Date().toISOString(), duration_ms: Date.now() - started } };
  const bodies = attachments.map((a) => Buffer.from(a.text, 'utf8'));
  const viaSocket = socket && !socket.destroyed;
  if (attachments.length > 0) {
    payload.attachments = attachments.map((a, i) => ({ name: a.name, bytes: bodies[i].length, encoding: 'utf8' }));
    // On stdout raw bytes cannot follow the line: the bytes travel inline as base64.
    if (!viaSocket) payload.attachments.forEach((a, i) => (a.base64 = bodies[i].toString('base64')));
  }
  if (viaSocket) {
    // 6. Wait for the ack (or the connection closing) so the result is not lost on exit.
    const acked = new Promise((resolve) => {
      onAck = resolve;
      socket.once('close', resolve);
      setTimeout(resolve, 5000).unref();
    });
    send(payload);
    // The announced bytes follow the line, in order, exactly as many as announced.
    for (const body of bodies) socket.write(body);
    await acked;
    socket.end();
  } else {
    send(payload);
  }
}

try {
  const root = path.resolve(input?.path ?? '.');
  const files = survey(root, input?.maxFiles ?? 5000);
  const byExtension = {};
  const surveyed = [];
  for (const [index, file] of files.entries()) {
    if (cancelled) {
      await finish('cancelled', { message: `cancelled: ${cancelled}`, processed: index });
      process.exit(130);
    }
    const content = orGone(() => readFileSync(file));
    if (!content) continue;
    surveyed.push(file);
    const ext = path.extname(file) || '(none)';
    const stats = (byExtension[ext] ??= { files: 0, lines: 0, bytes: 0 });
    stats.files += 1;
    stats.bytes += content.length;
    for (const byte of content) if (byte === 0x0a) stats.lines += 1;
    if (index % Math.max(1, Math.floor(files.length / 20)) === 0) {
      send({
        task_id: taskId,
        status: 'partial',
        data: { progress: Math.round((index / files.length) * 100), step: path.relative(root, file) },
      });
      await new Promise((resolve) => setImmediate(resolve)); // let cancel messages in
    }
  }
  // 7. `backchannel check` (docs/protocol.md §10) asks for a long silence and an echo of its input.
  const check = input?.conformance ?? {};
  const busyUntil = Date.now() + (Number(check.busy_ms) || 0);
  while (Date.now() < busyUntil && !cancelled) await new Promise((resolve) => setTimeout(resolve, 50));
  if (cancelled) {
    await finish('cancelled', { message: `cancelled: ${cancelled}`, processed: surveyed.length });
    process.exit(130);
  }
  const echo = check.echo !== undefined ? { echo: check.echo } : {};
  await finish('success', { root, files: surveyed.length, byExtension, ...echo }, [
    { name: 'files.txt', text: surveyed.map((file) => path.relative(root, file)).join('\n') },
  ]);
} catch (error) {
  // Every exception ends in an error payload — never silence.
  await finish('error', { message: error.message });
  process.exitCode = 1;
}
