// Figure 4 baseline, no broker: read each line, JSON.parse it, answer at once with a 2 KB line.
// BENCH_BURN_US: CPU to burn per message before answering (the limit row's padded pair).
import { createConnection } from 'node:net';
import { lineSplitter } from '../lib/lines.js';

const burnUs = Number(process.env.BENCH_BURN_US ?? 0);
const used = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
const socket = createConnection(process.env.BENCH_SOCKET);
socket.setEncoding('utf8');
let n = 0;
socket.on(
  'data',
  lineSplitter((message) => {
    if (message.type === 'stop') return socket.end();
    if (burnUs > 0) for (const end = used() + burnUs; used() < end;);
    socket.write(JSON.stringify({ type: 'ask', task_id: message.task_id, ask_id: `q${++n}`, question: message.answer }) + '\n');
  }),
);
