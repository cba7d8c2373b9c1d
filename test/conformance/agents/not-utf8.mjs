import { runAgent } from './agent-core.mjs';

await runAgent({ latin1: true });
