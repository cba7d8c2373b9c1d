// Figure 1, raw-protocol agent: one authenticated success line (token on the payload), wait for the ack, exit.
import { createConnection } from 'node:net';

const taskId = process.env.CURSOR_TASK_ID;
const socket = createConnection(process.env.CURSOR_IPC_PATH, () => {
  const { user, system } = process.cpuUsage();
  const payload = {
    task_id: taskId,
    token: process.env.CURSOR_IPC_TOKEN,
    status: 'success',
    data: { blob: 'x'.repeat(2048), cpu: user + system },
  };
  socket.write(JSON.stringify(payload) + '\n');
});
let seen = '';
socket.setEncoding('utf8');
socket.on('data', (chunk) => {
  seen += chunk;
  if (seen.includes('"type":"ack"')) socket.end();
});
