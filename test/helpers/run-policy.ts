/**
 * The run policy of tests that are about something else: their fixtures are arbitrary command lines
 * sent through the panel, MCP or the control endpoint, which the owner's default policy refuses
 * (docs/run-policy.md). The policy's own tests (test/broker/run-policy.test.ts, test/mcp/run-policy.test.ts,
 * test/fleet/run-policy.test.ts) use the default or their own rules.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RunPolicy } from '../../src/broker/run-policy.js';

/** Any command line, from every door, in any directory — what `run_policy: {allow: [{command: "*"}]}` says. */
export const ANY_COMMAND = new RunPolicy([{ name: 'tests: any command', command: '*', moreArgs: true }], 'the test');

/** A config file in `dir` whose run policy allows any command line (for hubs started as processes). */
export function anyCommandConfig(dir: string): string {
  const file = path.join(dir, 'config.yaml');
  fs.writeFileSync(file, 'run_policy:\n  allow:\n    - command: "*"\n');
  return file;
}
