// The gateway tool round-trip benchmark's agent (bench/gateway-tools.js): calls its first tool
// BENCH_ROUNDS times, one after another, each with its wall-clock send time ({sent}); the tool's
// result is the caller's send time ({sent}, JSON text or an object). Answers with the milliseconds
// from each result's send to its arrival here, as JSON text.
import { runAgent } from 'backchannel-agents/agent-runtime';

const now = () => performance.timeOrigin + performance.now();

runAgent(async (task) => {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 20);
  const back = [];
  for (let i = 0; i < rounds; i++) {
    const result = await task.callTool(task.tools[0].name, { sent: now(), i });
    const arrived = now();
    const { sent } = typeof result === 'string' ? JSON.parse(result) : result;
    back.push(arrived - sent);
  }
  return { text: JSON.stringify(back) };
});
