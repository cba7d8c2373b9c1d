/**
 * The shared shape of the task commands (`tasks`, `show`, `logs`, `wait`, `cancel`, `retry`,
 * `answer`): parse the command line, open the client (the hub, or the history on disk when the command
 * can do with it), resolve an abbreviated id, run, and turn a refusal into a one-line message and exit 1.
 */
import type { ParseArgsConfig } from 'node:util';
import { checkTaskIds, commandFailed, parseCommandLine, type CliCommand, type CommandLine } from '../command.js';
import { openClient, type BackchannelClient } from '../../client/index.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

export interface TaskCommandSpec<O extends OptionsConfig> {
  name: string;
  help: string;
  options: O;
  /** How many positionals: [min, max]. */
  positionals: [number, number];
  /** Works on the history on disk when no hub runs. */
  history: boolean;
  run(context: { line: CommandLine<O>; client: BackchannelClient; id: () => Promise<string> }): Promise<number>;
}

export function taskCommand<O extends OptionsConfig>(spec: TaskCommandSpec<O>): CliCommand {
  return {
    async run(argv) {
      const line = parseCommandLine(spec.name, argv, spec.options, spec.help, true);
      if (typeof line === 'number') return line;
      const wrong = checkTaskIds(spec.name, line.positionals, spec.positionals, spec.help);
      if (wrong !== undefined) return wrong;
      let client: BackchannelClient | undefined;
      try {
        client = await openClient({ withoutHub: spec.history ? 'history' : 'refuse' });
        const opened = client;
        return await spec.run({ line, client, id: () => opened.resolveId(line.positionals[0]!) });
      } catch (error) {
        return commandFailed(spec.name, error);
      } finally {
        await client?.close();
      }
    },
  };
}
