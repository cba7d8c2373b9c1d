// Figure 6: reports progress every `intervalMs` with a unique step text (the panel shows `step`),
// until cancelled or `ticks` are done.
import { runAgent } from 'backchannel-agents/agent-runtime';

runAgent(async (task) => {
  const { ticks, intervalMs } = task.input;
  for (let i = 1; i <= ticks && !task.signal.aborted; i++) {
    task.progress(i % 100, { step: `tick ${i}` });
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  if (task.signal.aborted) throw task.signal.reason;
  return { ticks };
});
