/** `backchannel check`: is a sub-agent (any language) conformant? Runs it under the protocol scenarios. */
import type { CliCommand } from '../command.js';
import { EXIT, parseCommandLine, usageError } from '../command.js';

const HELP = `Usage: backchannel check [options] -- <agent command> [args…]

Runs a sub-agent under a real broker in a set of scenarios and prints a report card: each protocol
rule passed, failed (with the rule and the line that broke it), could not be checked (warning), or
could not be judged because the machine was too busy for its timing (neither a pass nor a failure).
Scenarios that need the agent's help use the \`conformance\` input field (docs/protocol.md §10).

Scenarios: task-id, connect, input, payloads, progress, final-once, heartbeat, cancel,
stdout-fallback, clean-exit, utf8

Options:
  --scenario <names>  only these scenarios (comma-separated; repeatable)
  --input <json>      the agent's own input (the \`conformance\` field is added to an object)
  --cwd <dir>         working directory of the agent (default: here)
  --timeout <ms>      deadline of one run (default: 20000)
  --json              print the report card as one JSON object
  -h, --help          show this help

Exit code: 0 when nothing failed (warnings and unjudged scenarios allowed), 1 when a scenario failed,
2 usage error.`;

export const command: CliCommand = {
  async run(argv) {
    const split = argv.indexOf('--');
    const own = split === -1 ? argv : argv.slice(0, split);
    const parsed = parseCommandLine(
      'check',
      own,
      {
        scenario: { type: 'string', multiple: true },
        input: { type: 'string' },
        cwd: { type: 'string' },
        timeout: { type: 'string' },
        json: { type: 'boolean' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    const agent = split === -1 ? [] : argv.slice(split + 1);
    if (agent.length === 0) return usageError('backchannel check: give the agent command after `--`', HELP);
    const { checkAgent, formatReport, SCENARIO_NAMES } = await import('../../conformance/check.js');
    const { RUN_TIMEOUT_MS } = await import('../../conformance/observe.js');
    const only = (values.scenario ?? []).flatMap((s) => s.split(',')).filter(Boolean);
    const unknown = only.find((name) => !SCENARIO_NAMES.includes(name));
    if (unknown) return usageError(`backchannel check: unknown scenario "${unknown}" (known: ${SCENARIO_NAMES.join(', ')})`, HELP);
    let input: unknown;
    if (values.input !== undefined) {
      try {
        input = JSON.parse(values.input);
      } catch {
        return usageError(`backchannel check: Expected \`--input\` to be JSON, got \`${values.input}\``, HELP);
      }
    }
    const timeoutMs = values.timeout === undefined ? RUN_TIMEOUT_MS : Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      return usageError(`backchannel check: Expected \`--timeout\` to be a positive integer, got \`${values.timeout}\``, HELP);
    }
    const [command, ...args] = agent as [string, ...string[]];
    const card = await checkAgent(
      { command, args, timeoutMs, ...(input !== undefined ? { input } : {}), ...(values.cwd ? { cwd: values.cwd } : {}) },
      only.length > 0 ? only : SCENARIO_NAMES,
    );
    process.stdout.write(values.json ? JSON.stringify(card) + '\n' : formatReport(card));
    return card.failed > 0 ? EXIT.failed : EXIT.ok;
  },
};
