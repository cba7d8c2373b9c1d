/** `backchannel config path|show`: where the one config file is, and what it holds. */
import { stringify } from 'yaml';
import { ConfigError, loadConfig, SECTIONS } from '../../config/file.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel config <path|show> [--json] [--show-secrets]

One config file for every command: YAML with a section per command (${SECTIONS.join(', ')}).
Options on the command line win over the file. BACKCHANNEL_CONFIG=<file> reads another file.

  path     print the file's path (it may not exist yet)
  show     print the file's sections (--json: as one JSON object); secrets (webhook secrets,
           tokens, keys, passwords, and every value of an \`env\` mapping, where agents'
           API keys go) are shown as [hidden] unless --show-secrets is given

Options:
  --json           JSON output
  --show-secrets   print secrets as they are in the file
  -h, --help       show this help`;

/** Keys whose values are secrets wherever they stand; every value of an `env` mapping is one too. */
const SECRET_KEY = /^(secret|token|password|api_key|apikey|key)$|_(secret|token|password|key)$/i;
const HIDDEN = '[hidden]';

/** `value` with its secrets replaced by HIDDEN (a copy; `inEnv`: the value is an entry of an `env` mapping). */
export function withoutSecrets(value: unknown, inEnv = false): unknown {
  if (inEnv) return value === null || value === undefined ? value : HIDDEN;
  if (Array.isArray(value)) return value.map((item) => withoutSecrets(item));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => {
      if (key === 'env' && typeof item === 'object' && item !== null && !Array.isArray(item))
        return [key, Object.fromEntries(Object.entries(item).map(([name, v]) => [name, withoutSecrets(v, true)]))];
      return [key, SECRET_KEY.test(key) && typeof item === 'string' ? HIDDEN : withoutSecrets(item)];
    }),
  );
}

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine('config', argv, { json: { type: 'boolean' }, 'show-secrets': { type: 'boolean' } }, HELP, true);
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
    if (parsed.values['show-secrets'] !== true) config = { ...config, sections: withoutSecrets(config.sections) as typeof config.sections };
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
