/**
 * The shared shape of the change commands (`diff`, `apply`, `discard`, `worktrees`): parse the
 * command line, open the changes (the hub's, or the worktree registry on disk), resolve abbreviated
 * ids among the coding tasks, run, and turn a refusal into one line and exit 1.
 */
import type { ParseArgsConfig } from 'node:util';
import { checkTaskIds, commandFailed, parseCommandLine, type CliCommand, type CommandLine } from '../command.js';
import { openClient, type ChangeService } from '../../client/index.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

export interface ChangeCommandSpec<O extends OptionsConfig> {
  name: string;
  help: string;
  options: O;
  /** How many task ids: [min, max]. */
  ids: [number, number];
  run(context: { line: CommandLine<O>; changes: ChangeService; ids: string[] }): Promise<number>;
}

export function changeCommand<O extends OptionsConfig>(spec: ChangeCommandSpec<O>): CliCommand {
  return {
    async run(argv) {
      const line = parseCommandLine(spec.name, argv, spec.options, spec.help, true);
      if (typeof line === 'number') return line;
      const wrong = checkTaskIds(spec.name, line.positionals, spec.ids, spec.help);
      if (wrong !== undefined) return wrong;
      let client;
      try {
        client = await openClient({ withoutHub: 'history' });
        const { changes } = client;
        const ids: string[] = [];
        for (const prefix of line.positionals) ids.push(await changes.resolve(prefix));
        return await spec.run({ line, changes, ids });
      } catch (error) {
        return commandFailed(spec.name, error);
      } finally {
        await client?.close();
      }
    },
  };
}
