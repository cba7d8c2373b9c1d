// Figure 4, SDK agent: asks, and asks again with the answer it got (2 KB each way), `rounds` times.
import { runAgent } from 'backchannel-agents/agent-runtime';

runAgent(async (task) => {
  let question = task.input.payload;
  for (let i = 0; i < task.input.rounds; i++) question = await task.ask(question);
  return { rounds: task.input.rounds };
});
