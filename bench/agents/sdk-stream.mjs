// Figure 3, SDK agent: task.partial() for every message (the SDK coalesces one write per tick).
// Reports its CPU time for the whole send on stderr at exit (the broker keeps stderr as the log).
import { runAgent } from 'backchannel-agents/agent-runtime';
import { cpuMicros, partialData, produce } from './stream-message.mjs';

let c0;
process.on('exit', () => process.stderr.write(`BENCH_CPU ${cpuMicros() - c0}\n`));
runAgent(async (task) => {
  const { count, burst } = task.input;
  c0 = cpuMicros();
  await produce(count, burst, (i, sentAt) => task.partial(partialData(i, sentAt)));
  return { sent: count };
});
