// Figure 3 senders without the broker: the same workload over each peer transport, using that
// transport's ordinary API. Ends with a `done` message carrying the sender's CPU for the send.
// argv: <transport> <count> <burst>; transports: socket-coalesced, socket-single, stdout, ipc, jsonrpc, ws
import { createConnection } from 'node:net';
import { BASELINE_TASK_ID, cpuMicros, message, produce } from './stream-message.mjs';

const [transport, countArg, burstArg] = process.argv.slice(2);
const count = Number(countArg);
const burst = Number(burstArg);
const c0 = cpuMicros();
const line = (value) => JSON.stringify(value) + '\n';
const done = () => ({ done: true, cpu: cpuMicros() - c0 });

if (transport === 'socket-coalesced' || transport === 'socket-single') {
  const socket = createConnection(process.env.BENCH_SOCKET);
  await new Promise((resolve) => socket.once('connect', resolve));
  if (transport === 'socket-single') {
    await produce(count, burst, (i, at) => socket.write(line(message(BASELINE_TASK_ID, i, at))));
  } else {
    let batch = '';
    await produce(count, burst, (i, at) => {
      batch += line(message(BASELINE_TASK_ID, i, at));
      if ((i + 1) % burst === 0 || i === count - 1) {
        socket.write(batch);
        batch = '';
      }
    });
  }
  await new Promise((resolve) => socket.write('', resolve));
  socket.end(line(done()));
} else if (transport === 'stdout') {
  // console.log style: one write per message on a pipe.
  await produce(count, burst, (i, at) => process.stdout.write(line(message(BASELINE_TASK_ID, i, at))));
  await new Promise((resolve) => process.stdout.write('', resolve));
  process.stdout.write(line(done()));
} else if (transport === 'ipc') {
  await produce(count, burst, (i, at) => process.send(message(BASELINE_TASK_ID, i, at)));
  await new Promise((resolve) => process.send({ drain: true }, resolve));
  process.send(done(), () => process.disconnect());
} else if (transport === 'jsonrpc') {
  const loaded = await import('vscode-jsonrpc/node');
  const rpc = loaded.default ?? loaded;
  const socket = createConnection(process.env.BENCH_SOCKET);
  await new Promise((resolve) => socket.once('connect', resolve));
  const connection = rpc.createMessageConnection(new rpc.SocketMessageReader(socket), new rpc.SocketMessageWriter(socket));
  connection.listen();
  let last;
  await produce(count, burst, (i, at) => (last = connection.sendNotification('partial', message(BASELINE_TASK_ID, i, at))));
  await last;
  await connection.sendNotification('done', done());
  connection.dispose();
  socket.end();
} else if (transport === 'ws') {
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(`ws+unix://${process.env.BENCH_SOCKET}`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  await produce(count, burst, (i, at) => ws.send(JSON.stringify(message(BASELINE_TASK_ID, i, at))));
  await new Promise((resolve) => ws.send('{}', resolve));
  ws.send(JSON.stringify(done()), () => ws.close());
} else {
  throw new Error(`unknown transport ${transport}`);
}
