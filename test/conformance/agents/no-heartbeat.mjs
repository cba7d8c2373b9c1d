import { runAgent } from './agent-core.mjs';

await runAgent({ noHeartbeat: true });
