/**
 * The shared shape of the task commands (`tasks`, `show`, `logs`, `wait`, `cancel`, `retry`,
 * `answer`): parse the command line, open the hub (or the history on disk when the command can do
 * with it), resolve an abbreviated id, run, and turn a refusal into a one-line message and exit 1.
 */
import type { ParseArgsConfig } from 'node:util';
import { checkTaskIds, EXIT, parseCommandLine, type CliCommand, type CommandLine } from '../command.js';
import { resolveTaskId } from '../../client/task-ids.js';
import { NO_HUB, openCommandBridge, type CommandBridge } from './remote.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

export interface TaskCommandSpec<O extends OptionsConfig> {
  name: string;
  help: string;
  options: O;
  /** How many positionals: [min, max]. */
  positionals: [number, number];
  /** Works on the history on disk when no hub runs. */
  history: boolean;
  run(context: { line: CommandLine<O>; open: CommandBridge; id: () => Promise<string> }): Promise<number>;
}

export function taskCommand<O extends OptionsConfig>(spec: TaskCommandSpec<O>): CliCommand {
  return {
    async run(argv) {
      const line = parseCommandLine(spec.name, argv, spec.options, spec.help, true);
      if (typeof line === 'number') return line;
      const wrong = checkTaskIds(spec.name, line.positionals, spec.positionals, spec.help);
      if (wrong !== undefined) return wrong;
      let open: CommandBridge | undefined;
      try {
        open = await openCommandBridge({ history: spec.history });
        if (!open) {
          process.stderr.write(`backchannel ${spec.name}: ${NO_HUB}\n`);
          return EXIT.failed;
        }
        const bridge = open.bridge;
        return await spec.run({ line, open, id: () => resolveTaskId(bridge, line.positionals[0]!) });
      } catch (error) {
        process.stderr.write(`backchannel ${spec.name}: ${(error as Error).message}\n`);
        return EXIT.failed;
      } finally {
        await open?.close();
      }
    },
  };
}
