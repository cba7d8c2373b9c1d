// The protocol's limit for figure 1's SDK row: what an agent that reads its input must do at the least,
// written by hand — the SDK's module loaded (and not used), then hello → welcome + input → one success
// line → the ack → exit. The SDK agent against this is the SDK's own code; this against the bare
// baseline is the module, the broker and the hello round trip.
import 'backchannel-agents/agent-runtime';
import { createConnection } from 'node:net';

const taskId = process.env.CURSOR_TASK_ID;
const socket = createConnection(process.env.CURSOR_IPC_PATH, () => {
  socket.write(JSON.stringify({ type: 'hello', task_id: taskId, token: process.env.CURSOR_IPC_TOKEN, agent: 'raw-hello/1' }) + '\n');
});
let seen = '';
let sent = false;
socket.setEncoding('utf8');
socket.on('data', (chunk) => {
  seen += chunk;
  if (!sent && seen.includes('"type":"input"')) {
    sent = true;
    const { user, system } = process.cpuUsage();
    socket.write(JSON.stringify({ task_id: taskId, status: 'success', data: { blob: 'x'.repeat(2048), cpu: user + system } }) + '\n');
  }
  if (sent && seen.includes('"type":"ack"')) socket.end();
});
