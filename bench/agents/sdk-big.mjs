// Figure 2, SDK agent: returns a 10 MB string; meta.sent_at marks the moment before encoding starts.
// The string is built before connecting, as in the raw client, so both start from the same heap state.
import { runAgent } from 'backchannel-agents/agent-runtime';
import { bigString, wallNow } from './big-data.mjs';

const data = bigString();
runAgent(async (task) => {
  task.meta({ sent_at: wallNow() });
  return data;
});
