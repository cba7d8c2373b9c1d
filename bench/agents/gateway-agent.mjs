// The gateway benchmark's model (bench/gateway.js). BENCH_GATEWAY_MODE:
//   latency  sends one partial "<wall-clock send time in ms>|", then answers "done"
//   quick    answers "ok" at once (a whole request, the same work as `run` of this agent)
import { runAgent } from 'backchannel-agents/agent-runtime';

runAgent(async (task) => {
  if (process.env.BENCH_GATEWAY_MODE === 'latency') {
    task.partial({ text: `${performance.timeOrigin + performance.now()}|` });
    return { text: 'done' };
  }
  return { text: 'ok' };
});
