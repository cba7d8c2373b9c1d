/** `backchannel config path|show`: where the one config file is, and what it holds. */
import { stringify } from 'yaml';
import { ConfigError, loadConfig, SECTIONS } from '../../config/file.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel config <path|show> [--json]

One config file for every command: YAML with a section per command (${SECTIONS.join(', ')}).
Options on the command line win over the file. BACKCHANNEL_CONFIG=<file> reads another file.

  path     print the file's path (it may not exist yet)
  show     print the file's sections (--json: as one JSON object)

Options:
  --json       JSON output
  -h, --help   show this help`;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine('config', argv, { json: { type: 'boolean' } }, HELP, true);
    if (typeof parsed === 'number') return parsed;
    const [action, extra] = parsed.positionals;
    if ((action !== 'path' && action !== 'show') || extra !== undefined) {
      return usageError(`backchannel config: expected path or show${action ? `, got "${action}"` : ''}`, HELP);
    }
    const json = parsed.values.json === true;
    let config;
    try {
      config = loadConfig();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      if (json) process.stdout.write(JSON.stringify({ status: 'error', reason: 'config', message: error.message }) + '\n');
      else process.stderr.write(`backchannel config: ${error.message}\n`);
      return EXIT.failed;
    }
    if (action === 'path') {
      process.stdout.write(json ? JSON.stringify({ path: config.path, exists: config.exists }) + '\n' : config.path + '\n');
    } else if (json) {
      process.stdout.write(JSON.stringify(config) + '\n');
    } else {
      const body = Object.keys(config.sections).length ? stringify(config.sections) : '(empty: every command uses its defaults)\n';
      process.stdout.write(
        `# ${config.path}${config.exists ? '' : ' (does not exist: every command uses its defaults)'}\n${config.exists ? body : ''}`,
      );
    }
    return EXIT.ok;
  },
};
