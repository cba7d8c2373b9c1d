import { runAgent } from './agent-core.mjs';

await runAgent({ grandchild: true });
