// Figure 4 under load: an SDK agent that streams a partial every `intervalMs` (default 10 ms) until cancelled.
import { runAgent } from 'backchannel-agents/agent-runtime';

runAgent(async (task) => {
  const intervalMs = task.input?.intervalMs ?? 10;
  let i = 0;
  await new Promise((resolve) => {
    const timer = setInterval(() => task.progress(i++ % 100, { step: `chunk ${i}`, note: 'x'.repeat(100) }), intervalMs);
    task.signal.addEventListener('abort', () => resolve(clearInterval(timer)), { once: true });
  });
  return { sent: i };
});
