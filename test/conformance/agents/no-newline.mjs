import { runAgent } from './agent-core.mjs';

await runAgent({ noFinalNewline: true });
