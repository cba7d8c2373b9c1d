/**
 * The model-API gateway (OpenAI Chat Completions and Responses, Anthropic Messages): other AI tools
 * use Backchannel sub-agents as their "model".
 * Electron-free; `backchannel gateway` starts it with `startGateway` — on the running hub when there
 * is one, so requests show in its panel — and an embedding app can pass its own broker.
 *
 * ```ts
 * const gateway = await startGateway({ config: loadGatewayConfig() });
 * // point any OpenAI client at gateway.baseURL (http://127.0.0.1:8976/v1)
 * await gateway.close();
 * ```
 */
import { TaskBroker } from '../broker/broker.js';
import { silentLogger, type Logger } from '../broker/log.js';
import { clientOf, defaultWorktreeDir, type BackchannelClient } from '../client/index.js';
import { GatewayConfigError, resolveGatewayConfig, type GatewayConfig } from './config.js';
import { GATEWAY_HOST, startGatewayServer } from './server.js';
import { unavailableRoute } from './turn.js';
import { Workspaces } from './workspaces.js';
import { modelRunRules } from './routes.js';
import { ownerRunPolicy } from '../hub/run-policy.js';

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
   * The broker to run requests on (an embedding app may pass its own, so requests show in its panel);
   * the gateway then caps its own running requests at `config.maxConcurrent`. Without one, the
   * gateway creates a broker with `concurrency: config.maxConcurrent` and closes it on `close()`.
   */
  broker?: TaskBroker;
  /** The gateway closes `broker` on `close()` (it was opened for it). @default false */
  ownsBroker?: boolean;
  /**
   * Run requests through this client instead (the hub's, from `openClient`): their tasks show in its
   * panel and history, and its environment and concurrency apply; the gateway still caps its own
   * running requests at `config.maxConcurrent`. Closed with the gateway.
   */
  client?: BackchannelClient;
  /**
   * `client` runs on a broker opened for this gateway alone (`openClient`'s private one): its
   * concurrency is the gateway's. @default false
   */
  ownsClient?: boolean;
  /** @default all defaults (`resolveGatewayConfig({})`) */
  config?: GatewayConfig;
  logger?: Logger;
  /** Quiet time after which a started stream gets an SSE keep-alive comment. @default 15000 */
  keepAliveMs?: number;
}

export interface Gateway {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `http://127.0.0.1:<port>/v1`: what OpenAI clients take as their base URL. */
  readonly baseURL: string;
  readonly port: number;
  /** The broker requests run on; undefined when they run on a hub. */
  readonly broker: TaskBroker | undefined;
  readonly config: GatewayConfig;
  /** Stops listening, cancels running requests, waits for their processes; closes an own broker. */
  close(): Promise<void>;
}

export async function startGateway(options: StartGatewayOptions = {}): Promise<Gateway> {
  const config = options.config ?? resolveGatewayConfig({});
  const logger = options.logger ?? silentLogger;
  const { client } = options;
  const ownBroker = (options.broker === undefined || options.ownsBroker === true) && client === undefined;
  const worktreeModels = Object.keys(config.models).filter((name) => config.models[name]!.worktree);
  if (worktreeModels.length > 0 && options.broker && !options.broker.worktrees)
    throw new GatewayConfigError(
      `model(s) ${worktreeModels.join(', ')} have \`worktree: true\`, but the broker given keeps no worktrees (give it a \`dataDir\` or a \`worktreeDir\`)`,
    );
  // Own broker: agents get a minimal environment (config.envAllow), not the gateway's keys. Its
  // worktrees are where every Backchannel without a hub keeps them, so `backchannel diff` finds them.
  const broker = client
    ? undefined
    : (options.broker ??
      new TaskBroker({
        concurrency: config.maxConcurrent,
        logger,
        env: { allow: config.envAllow },
        runPolicy: ownerRunPolicy({ extra: modelRunRules(config) }),
        ...(worktreeModels.length > 0 ? { worktreeDir: defaultWorktreeDir() } : {}),
      }));
  const workspaces = config.workspacesDir === undefined ? undefined : new Workspaces(config.workspacesDir);
  const closeTasks = async (): Promise<void> => {
    await client?.close();
    if (ownBroker) await broker?.close();
  };
  try {
    await broker?.ready;
    const server = await startGatewayServer({
      tasks: client ?? clientOf(broker!),
      runsOn: client?.where.kind === 'hub' ? `hub ${client.where.path}` : ownBroker || options.ownsClient ? 'gateway' : 'app',
      config,
      logger,
      limitConcurrency: !(ownBroker || options.ownsClient),
      ...(options.keepAliveMs ? { keepAliveMs: options.keepAliveMs } : {}),
      ...(workspaces ? { workspaces } : {}),
    });
    const url = `http://${GATEWAY_HOST}:${server.port}`;
    let closing: Promise<void> | undefined;
    return {
      url,
      baseURL: `${url}/v1`,
      port: server.port,
      broker,
      config,
      close() {
        closing ??= (async () => {
          await server.close();
          workspaces?.close();
          await closeTasks();
        })();
        return closing;
      },
    };
  } catch (error) {
    workspaces?.close();
    await closeTasks();
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
