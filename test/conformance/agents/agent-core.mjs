/**
 * A conformant raw-protocol agent that honours the `conformance` input fields (docs/protocol.md §9),
 * with switchable defects: each broken fixture beside it turns exactly one on.
 */
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';

export async function runAgent(defects = {}) {
  const fromArgv = process.argv.find((a) => a.startsWith('--task-id='))?.slice('--task-id='.length);
  const naive = fromArgv?.split('-')[0]; // the classic bug: an id with dashes cut by a naive parser
  const taskId = defects.naiveArgv ? (process.env.CURSOR_TASK_ID ?? naive) : (fromArgv ?? process.env.CURSOR_TASK_ID);
  if (!taskId) {
    console.error('no task id (--task-id= or CURSOR_TASK_ID)');
    process.exit(2);
  }
  const ipcPath = defects.stdoutOnly ? undefined : process.env.CURSOR_IPC_PATH;
  const token = process.env.CURSOR_IPC_TOKEN;
  const heartbeatMs = Number(process.env.CURSOR_HEARTBEAT_MS) || 0;
  const socket = ipcPath && token ? await connect(ipcPath) : null;
  let cancelled = false;
  let acked = () => {};
  let input = null;

  const line = (message) => JSON.stringify(message);
  const send = (message) => {
    if (socket) socket.write(line(message) + '\n');
    else process.stdout.write(`data: ${line(message)}\n\n`);
  };
  const meta = () => ({ timestamp: new Date().toISOString() });

  if (socket) {
    let buffered = '';
    socket.setEncoding('utf8');
    input = await new Promise((resolve) => {
      socket.on('data', (chunk) => {
        buffered += chunk;
        for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
          const message = JSON.parse(buffered.slice(0, nl));
          buffered = buffered.slice(nl + 1);
          if (message.type === 'input') resolve(message.data);
          else if (message.type === 'cancel' && !defects.ignoreCancel) cancelled = true;
          else if (message.type === 'ack') acked();
        }
      });
      socket.on('close', () => resolve(null));
      send({ type: 'hello', task_id: taskId, token });
    });
  }
  process.on('SIGTERM', () => {
    if (defects.ignoreCancel) return;
    cancelled = true;
  });

  const check = input?.conformance ?? {};
  const heartbeat =
    heartbeatMs && !defects.noHeartbeat ? setInterval(() => send({ task_id: taskId, status: 'heartbeat' }), heartbeatMs) : null;
  if (defects.grandchild) spawn('sleep', ['30'], { stdio: 'ignore' }).unref();
  send({ task_id: taskId, status: 'partial', data: { progress: 10 }, meta: meta() });
  const until = Date.now() + (check.busy_ms ?? 0);
  while (Date.now() < until && !cancelled) await new Promise((resolve) => setTimeout(resolve, 20));
  clearInterval(heartbeat);

  const status = cancelled ? 'cancelled' : 'success';
  const data = cancelled ? { message: 'cancelled' } : { done: true, ...(check.echo !== undefined ? { echo: check.echo } : {}) };
  const final = { task_id: taskId, status, data, meta: meta() };
  if (!socket) {
    send(final);
    return;
  }
  const ack = new Promise((resolve) => {
    acked = resolve;
    socket.once('close', resolve);
  });
  if (defects.noFinalNewline && status === 'success') socket.write(line(final));
  else if (defects.latin1 && status === 'success') {
    // "café" in Latin-1: the é is the lone byte 0xE9, which is not UTF-8.
    const [before, after] = line({ ...final, data: { ...data, name: 'caf<E9>' } }).split('<E9>');
    socket.write(Buffer.concat([Buffer.from(before), Buffer.from([0xe9]), Buffer.from(`${after}\n`)]));
  } else send(final);
  if (!defects.noFinalNewline) await ack;
  if (defects.writeAfterFinal) send({ task_id: taskId, status: 'partial', data: { progress: 100 }, meta: meta() });
  socket.end();
}

function connect(path, retries = 20) {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    socket.once('connect', () => resolve(socket));
    socket.once('error', (error) => {
      if (retries > 0) setTimeout(() => connect(path, retries - 1).then(resolve, reject), 25);
      else reject(error);
    });
  });
}
