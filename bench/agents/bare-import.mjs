// The limit of figure 1's SDK row: the bare baseline (bare-connect.mjs) after loading the SDK's module,
// and nothing else of it — what module loading alone costs a sub-agent.
import 'backchannel-agents/agent-runtime';
import { createConnection } from 'node:net';

const socket = createConnection(process.env.BENCH_SOCKET, () => {
  const { user, system } = process.cpuUsage();
  socket.end(JSON.stringify({ status: 'success', data: 'x'.repeat(2048), cpu: user + system }) + '\n');
});
