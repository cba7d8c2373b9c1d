// Figure 2, attachments: the same 10 MB string sent with task.attach() beside a small JSON line.
// meta.sent_at marks the moment before attach() (so UTF-8 encoding counts); argv[2] = 'after' marks
// it after attach(), i.e. from the agent's last call to the resolved result.
import { runAgent } from 'backchannel-agents/agent-runtime';
import { bigString, wallNow } from './big-data.mjs';

const data = bigString();
const after = process.argv[2] === 'after';
runAgent(async (task) => {
  if (!after) task.meta({ sent_at: wallNow() });
  task.attach('result.txt', data);
  if (after) task.meta({ sent_at: wallNow() });
  return { attached: 'result.txt' };
});
