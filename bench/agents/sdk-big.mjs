// Figure 2, SDK agent: returns a 10 MB string; meta.sent_at marks the moment before encoding starts.
import { runAgent } from 'backchannel/agent-runtime';
import { bigString, wallNow } from './big-data.mjs';

runAgent(async (task) => {
  const data = bigString();
  task.meta({ sent_at: wallNow() });
  return data;
});
