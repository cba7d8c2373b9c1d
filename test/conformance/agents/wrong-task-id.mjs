import { runAgent } from './agent-core.mjs';

await runAgent({ naiveArgv: true });
