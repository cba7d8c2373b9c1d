/**
 * The shared shape of the commands that work on tasks through the client: parse the command line,
 * check how many ids it has, open the client (the hub; without one, the history and worktrees on
 * disk, or a refusal), run, and turn a failure into one line (or, with `--json`, one object) with the
 * exit code of its error code. The task commands (`tasks`, `show`, `logs`, `wait`, `cancel`, `retry`,
 * `answer`) resolve an abbreviated task id; the change commands (`diff`, `apply`, `discard`,
 * `worktrees`) resolve theirs among the coding tasks.
 */
import type { ParseArgsConfig } from 'node:util';
import { checkTaskIds, commandFailed, parseCommandLine, type CliCommand, type CommandLine } from '../command.js';
import { openClient, type BackchannelClient, type ChangeService } from '../../client/index.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

interface CommandSpec<O extends OptionsConfig> {
  name: string;
  help: string;
  options: O;
}

export interface TaskCommandSpec<O extends OptionsConfig> extends CommandSpec<O> {
  /** How many positionals: [min, max]. */
  positionals: [number, number];
  /** Works on the history on disk when no hub runs. */
  history: boolean;
  run(context: { line: CommandLine<O>; client: BackchannelClient; id: () => Promise<string> }): Promise<number>;
}

export interface ChangeCommandSpec<O extends OptionsConfig> extends CommandSpec<O> {
  /** How many task ids: [min, max]. */
  ids: [number, number];
  run(context: { line: CommandLine<O>; changes: ChangeService; ids: string[] }): Promise<number>;
}

export function taskCommand<O extends OptionsConfig>(spec: TaskCommandSpec<O>): CliCommand {
  return clientCommand(spec, spec.positionals, spec.history ? 'history' : 'refuse', (line, client) =>
    spec.run({ line, client, id: () => client.resolveId(line.positionals[0]!) }),
  );
}

export function changeCommand<O extends OptionsConfig>(spec: ChangeCommandSpec<O>): CliCommand {
  return clientCommand(spec, spec.ids, 'history', async (line, { changes }) => {
    const ids: string[] = [];
    for (const prefix of line.positionals) ids.push(await changes.resolve(prefix));
    return spec.run({ line, changes, ids });
  });
}

function clientCommand<O extends OptionsConfig>(
  { name, help, options }: CommandSpec<O>,
  ids: [number, number],
  withoutHub: 'history' | 'refuse',
  run: (line: CommandLine<O>, client: BackchannelClient) => Promise<number>,
): CliCommand {
  return {
    async run(argv) {
      const line = parseCommandLine(name, argv, options, help, true);
      if (typeof line === 'number') return line;
      const wrong = checkTaskIds(name, line.positionals, ids, help);
      if (wrong !== undefined) return wrong;
      let client: BackchannelClient | undefined;
      try {
        client = await openClient({ withoutHub });
        return await run(line, client);
      } catch (error) {
        return commandFailed(name, error);
      } finally {
        await client?.close();
      }
    },
  };
}
