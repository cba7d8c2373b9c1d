// Figure 1, SDK agent: returns a 2 KB result at once (and its own CPU time so far).
import { runAgent } from 'backchannel-agents/agent-runtime';

runAgent(async () => {
  const { user, system } = process.cpuUsage();
  return { blob: 'x'.repeat(2048), cpu: user + system };
});
