/** `backchannel gateway`: the OpenAI-compatible API on 127.0.0.1, each request run as a sub-agent. */
import type { CliCommand } from '../command.js';
import { EXIT, parseCommandLine, runUntilSignal, usageError } from '../command.js';
import { defaultConfigPath } from '../../gateway/config.js';

const HELP = `Usage: backchannel gateway [options]

Serves the OpenAI Chat Completions API on 127.0.0.1, so tools that speak it (OpenCode, the openai
client, curl) can use Backchannel sub-agents as their model. Each request runs as one task; by
default the cursor-cli template answers (the Cursor CLI \`agent\`, logged in or CURSOR_API_KEY).

Options:
  --port <n>        port to listen on; 0 picks a free one (default: the config's, else 8976)
  --config <path>   YAML config (default: ${defaultConfigPath()}, optional)
  -h, --help        show this help

Config keys: port, api_key, default_model, request_timeout_ms, max_concurrent, cursor_cli_path,
workspace, models, list_cli_models (see docs/gateway.md).

Stop with Ctrl+C: running requests are cancelled and their processes stopped.`;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'gateway',
      argv,
      {
        port: { type: 'string' },
        config: { type: 'string' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    const port = values.port === undefined ? undefined : Number(values.port);
    if (port !== undefined && (values.port?.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)) {
      return usageError(`backchannel gateway: Expected \`--port\` to be an integer from 0 to 65535, got \`${values.port}\``, HELP);
    }

    const { loadGatewayConfig, startGateway } = await import('../../gateway/index.js');
    const { createHeadlessLogger } = await import('../../broker/log.js');
    let gateway;
    try {
      const config = loadGatewayConfig(values.config);
      if (port !== undefined) config.port = port;
      gateway = await startGateway({ config, logger: createHeadlessLogger({ console: 'info' }) });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      const hint = e.code === 'EADDRINUSE' ? ' (another gateway running? pick another with --port)' : '';
      process.stderr.write(`backchannel gateway: ${e.message}${hint}\n`);
      return EXIT.failed;
    }
    const { config } = gateway;
    const model = config.defaultModel;
    const auth = config.apiKey === undefined ? '' : ` \\\n  -H "Authorization: Bearer $BACKCHANNEL_GATEWAY_KEY"`;
    process.stdout.write(
      [
        `Backchannel gateway: ${gateway.baseURL}`,
        `Config: ${config.source ?? 'defaults (no config file)'}`,
        `Models: ${Object.keys(config.models).join(', ')} (default: ${model})`,
        config.apiKey === undefined ? 'API key: none needed (listening on 127.0.0.1 only)' : 'API key: required (api_key in the config)',
        '',
        'Try it:',
        `  curl -N ${gateway.baseURL}/chat/completions -H 'Content-Type: application/json'${auth} \\`,
        `    -d '{"model":"${model}","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'`,
        '',
        'Press Ctrl+C to stop.',
        '',
      ].join('\n'),
    );

    return runUntilSignal('gateway', 'running requests', () => gateway.close());
  },
};
