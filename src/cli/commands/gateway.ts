/** `backchannel gateway`: the OpenAI and Anthropic model APIs on 127.0.0.1, each request run as a sub-agent. */
import type { CliCommand } from '../command.js';
import { EXIT, parseCommandLine, runUntilSignal, usageError } from '../command.js';
import { defaultConfigPath } from '../../gateway/config.js';

const HELP = `Usage: backchannel gateway [options]

Serves the OpenAI Chat Completions and Responses APIs and the Anthropic Messages API on 127.0.0.1,
so tools that speak them (Claude Code, Codex, OpenCode, the openai and @anthropic-ai/sdk clients,
curl) can use Backchannel sub-agents as their model. Each request runs as one task; by default the
cursor-cli template answers (the Cursor CLI \`agent\`, logged in or CURSOR_API_KEY). Clients send
the key printed at the first start (kept in ~/.config/backchannel/gateway-key).

When a hub runs (the desktop app or \`backchannel serve\`), each request's task runs there and
shows in its panel and history; without one (or with --local) this process runs them.

Options:
  --port <n>        port to listen on; 0 picks a free one (default: the config's, else 8976)
  --config <path>   a YAML file in the gateway's schema (default: the gateway section of
                    \`backchannel config path\`; else the old ${defaultConfigPath()})
  --local           run the tasks in this process even when a hub runs
  -h, --help        show this help

Config keys: port, api_key, auth, default_model, request_timeout_ms, max_concurrent, max_queued,
max_connections, cursor_cli_path, workspace, env_allow, side_requests, client_system_prompt,
sessions, session_workspaces, workspaces_dir, models, list_cli_models (see docs/gateway.md).

Stop with Ctrl+C: running requests are cancelled and their processes stopped.`;

/**
 * Without --config: the `gateway:` section of the one config file (src/config), else the gateway's
 * old file ~/.backchannel/config.yaml (with a notice to move it), else the defaults; a key either way.
 */
async function gatewayConfigFromOneFile() {
  const { existsSync } = await import('node:fs');
  const { loadConfig, legacyGatewayConfigPath } = await import('../../config/file.js');
  const { gatewayConfigFromSection, loadGatewayConfig } = await import('../../gateway/config.js');
  const one = loadConfig();
  if (one.sections.gateway) return gatewayConfigFromSection(one.sections.gateway, one.path);
  const legacy = legacyGatewayConfigPath();
  if (!existsSync(legacy)) return loadGatewayConfig(undefined);
  process.stderr.write(
    `backchannel gateway: reading ${legacy}, the gateway's old config file; move its settings under \`gateway:\` in ${one.path}\n`,
  );
  return loadGatewayConfig(legacy);
}

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'gateway',
      argv,
      {
        port: { type: 'string' },
        config: { type: 'string' },
        local: { type: 'boolean' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    const port = values.port === undefined ? undefined : Number(values.port);
    if (port !== undefined && (values.port?.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)) {
      return usageError(`backchannel gateway: Expected \`--port\` to be an integer from 0 to 65535, got \`${values.port}\``, HELP);
    }

    const { loadGatewayConfig, startGateway, gatewayBanner, gatewayClientOptions } = await import('../../gateway/index.js');
    const { createHeadlessLogger, openClient } = await import('../../client/index.js');
    let gateway;
    let hubPath: string | undefined;
    try {
      const config = values.config !== undefined ? loadGatewayConfig(values.config) : await gatewayConfigFromOneFile();
      if (port !== undefined) config.port = port;
      const logger = createHeadlessLogger({ console: 'info' });
      // The one no-hub policy (src/client/open.ts), with the broker the gateway would make itself.
      const client = await openClient(gatewayClientOptions(config, logger, values.local === true));
      hubPath = client.where.kind === 'hub' ? client.where.path : undefined;
      try {
        gateway = await startGateway({ config, logger, client, ownsClient: client.where.kind === 'local' });
      } catch (error) {
        await client.close();
        throw error;
      }
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      const hint = e.code === 'EADDRINUSE' ? ' (another gateway running? pick another with --port)' : '';
      process.stderr.write(`backchannel gateway: ${e.message}${hint}\n`);
      return EXIT.failed;
    }
    const stopped = runUntilSignal('gateway', 'running requests', () => gateway.close());
    process.stdout.write(gatewayBanner(gateway, hubPath));
    return stopped;
  },
};
