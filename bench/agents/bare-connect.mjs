// Baseline for figure 1: no broker. Connect to $BENCH_SOCKET, write one 2 KB JSON line, exit.
import { createConnection } from 'node:net';

const socket = createConnection(process.env.BENCH_SOCKET, () => {
  const { user, system } = process.cpuUsage();
  socket.end(JSON.stringify({ status: 'success', data: 'x'.repeat(2048), cpu: user + system }) + '\n');
});
