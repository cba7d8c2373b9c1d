/**
 * The model-API gateway (OpenAI Chat Completions and Responses, Anthropic Messages): other AI tools
 * use Backchannel sub-agents as their "model".
 * Electron-free, a front-end over the one client (src/client): `backchannel gateway` starts it with
 * `startGateway` and the client `openClient` gives it — the running hub's when there is one, so
 * requests show in its panel — and an embedding app passes `clientOf(itsBroker)`.
 *
 * ```ts
 * const gateway = await startGateway({ config: loadGatewayConfig() });
 * // point any OpenAI client at gateway.baseURL (http://127.0.0.1:8976/v1)
 * await gateway.close();
 * ```
 */
import {
  defaultWorktreeDir,
  openClient,
  silentLogger,
  type BackchannelClient,
  type Logger,
  type OpenClientOptions,
} from '../client/index.js';
import { GatewayConfigError, resolveGatewayConfig, type GatewayConfig } from './config.js';
import { GATEWAY_HOST, startGatewayServer } from './server.js';
import type { Clock } from '../model/clock.js';
import { unavailableRoute } from './turn-errors.js';
import { Workspaces } from './workspaces.js';
import { modelRunRules } from './routes.js';

export {
  defaultConfigPath,
  GatewayConfigError,
  loadGatewayConfig,
  resolveGatewayConfig,
  type GatewayConfig,
  type ModelRoute,
} from './config.js';
export { GATEWAY_HOST, gatewayProblems } from './server.js';
export { modelRunRules } from './routes.js';
import { gatewayProblems } from './server.js';

export interface StartGatewayOptions {
  /**
   * The client requests run through, closed with the gateway: the hub's (from `openClient`) — their
   * tasks show in its panel and history, its environment and concurrency apply — or an embedding
   * app's `clientOf(broker)`. The gateway then caps its own running requests at `config.maxConcurrent`.
   * Without one, the gateway opens a private one (`gatewayClientOptions`, never the hub's): a broker
   * of its own with `concurrency: config.maxConcurrent`, closed on `close()`.
   */
  client?: BackchannelClient;
  /**
   * `client` runs on a broker opened for this gateway alone (`openClient`'s private one, made with
   * `gatewayClientOptions`): its concurrency is the gateway's. @default false
   */
  ownsClient?: boolean;
  /** @default all defaults (`resolveGatewayConfig({})`) */
  config?: GatewayConfig;
  logger?: Logger;
  /** Quiet time after which a started stream gets an SSE keep-alive comment. @default STREAM_KEEP_ALIVE_MS */
  keepAliveMs?: number;
  /** What background responses' keep time and request deadlines are measured on (a test's fake clock). @default systemClock */
  clock?: Clock;
}

export interface Gateway {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `http://127.0.0.1:<port>/v1`: what OpenAI clients take as their base URL. */
  readonly baseURL: string;
  readonly port: number;
  /** The client requests run through (the gateway's private one when none was given). */
  readonly client: BackchannelClient;
  readonly config: GatewayConfig;
  /** Stops listening, cancels running requests, waits for their processes; closes the client. */
  close(): Promise<void>;
}

/**
 * What `openClient` gets for a gateway's tasks: without a hub (or with `local`), a private broker
 * whose agents get a minimal environment (`config.envAllow`), not the gateway's keys, with the
 * configured `command` models allowed to run. Its worktrees (a `worktree: true` model) are where
 * every Backchannel without a hub keeps them, so `backchannel diff` finds them.
 */
export function gatewayClientOptions(config: GatewayConfig, logger: Logger, local: boolean): OpenClientOptions {
  const worktrees = Object.values(config.models).some((route) => route.worktree);
  return {
    withoutHub: 'private',
    local,
    broker: {
      concurrency: config.maxConcurrent,
      logger,
      env: { allow: config.envAllow },
      ...(worktrees ? { worktreeDir: defaultWorktreeDir() } : {}),
    },
    runRules: modelRunRules(config),
  };
}

/** A `worktree: true` model on a client whose tasks cannot have a worktree stops the gateway at start. */
function checkWorktrees(config: GatewayConfig, client: BackchannelClient): void {
  const worktreeModels = Object.keys(config.models).filter((name) => config.models[name]!.worktree);
  if (worktreeModels.length > 0 && !client.keepsWorktrees)
    throw new GatewayConfigError(
      `model(s) ${worktreeModels.join(', ')} have \`worktree: true\`, but the client given runs its tasks on a broker that keeps no worktrees (give the broker a \`dataDir\` or a \`worktreeDir\`)`,
    );
}

export async function startGateway(options: StartGatewayOptions = {}): Promise<Gateway> {
  const config = options.config ?? resolveGatewayConfig({});
  const logger = options.logger ?? silentLogger;
  if (options.client) checkWorktrees(config, options.client);
  // Made at start, so that a root not of our own stops the gateway (bridge mode's agents always need one).
  const workspaces = new Workspaces(config.workspacesDir);
  let client: BackchannelClient;
  try {
    client = options.client ?? (await openClient(gatewayClientOptions(config, logger, true)));
  } catch (error) {
    workspaces.close();
    throw error;
  }
  // The broker is the gateway's own: its concurrency is `max_concurrent` already.
  const ownBroker = options.client === undefined || options.ownsClient === true;
  try {
    const server = await startGatewayServer({
      tasks: client,
      runsOn: client.where.kind === 'hub' ? `hub ${client.where.path}` : ownBroker ? 'gateway' : 'app',
      config,
      logger,
      limitConcurrency: !ownBroker,
      ...(options.keepAliveMs ? { keepAliveMs: options.keepAliveMs } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      workspaces,
    });
    const url = `http://${GATEWAY_HOST}:${server.port}`;
    let closing: Promise<void> | undefined;
    return {
      url,
      baseURL: `${url}/v1`,
      port: server.port,
      client,
      config,
      close() {
        closing ??= (async () => {
          await server.close();
          workspaces.close();
          await client.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    workspaces.close();
    await client.close();
    throw error;
  }
}

/** What `backchannel gateway` prints at start: the URL, the key (in full only when new), problems, a curl line. */
export function gatewayBanner(gateway: Pick<Gateway, 'baseURL' | 'config'>, hubPath?: string): string {
  const { config, baseURL } = gateway;
  const model = config.defaultModel;
  const key =
    config.apiKey === undefined
      ? 'API key: none (auth: none — any local user can use this gateway)'
      : config.keyCreated
        ? `API key (new; saved in ${config.keyFile}, shown only this once): ${config.apiKey}`
        : config.keyFile
          ? `API key: in ${config.keyFile}`
          : 'API key: api_key in the config';
  const header =
    config.apiKey === undefined
      ? ''
      : ` \\\n  -H "Authorization: Bearer ${config.keyFile ? `$(cat ${config.keyFile})` : '$BACKCHANNEL_GATEWAY_KEY'}"`;
  const problems = gatewayProblems(config, (route) => unavailableRoute(config, route));
  return [
    `Backchannel gateway: ${baseURL}`,
    `Config: ${config.source ?? 'defaults (no config file)'}`,
    `Models: ${Object.keys(config.models).join(', ')} (default: ${model})`,
    hubPath ? `Tasks run on the hub at ${hubPath} (they show in its panel; --local runs them here)` : 'Tasks run in this process',
    key,
    ...problems.map((problem) => `Warning: ${problem}`),
    '',
    'Try it:',
    `  curl -N ${baseURL}/chat/completions -H 'Content-Type: application/json'${header} \\`,
    `    -d '{"model":"${model}","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'`,
    '',
    'Press Ctrl+C to stop.',
    '',
  ].join('\n');
}
