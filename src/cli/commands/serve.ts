/** `backchannel serve`: the task panel and its API on 127.0.0.1, for machines without a display. */
import type { CliCommand, CommandLine } from '../command.js';
import { EXIT, parseCommandLine, runUntilSignal, usageError } from '../command.js';
import { DEMO_TAG } from '../../model/task.js';
import { BROKER_FLAGS, BROKER_FLAGS_HELP, brokerFlagOptions } from '../broker-flags.js';
import { defaultDataDir } from '../../paths/data-dir.js';
import { AGENT_CPU, type AgentCpu } from '../../broker/process/agent-weight.js';
import { redactedUrl, takeRedisUrl } from '../../fleet/redis-url.js';
import type { Section } from '../../config/sections.js';
import type { Headless } from '../../hub/headless/start.js';
import type { McpToken } from '../../mcp/http-mount.js';
import { readOwnVersion } from '../../version.js';

const HELP = `Usage: backchannel serve [options]

Serves the task panel and its API on 127.0.0.1 and prints the URL to open. Only that URL works:
it carries a token that is new on every start, unless --keep-token or BACKCHANNEL_PANEL_TOKEN.
Serves MCP over Streamable HTTP at /mcp on the same port, behind a bearer token of its own (kept in
~/.config/backchannel/mcp-token, printed at the first start); set-up for each client: docs/mcp.md.

Options:
  --port <n>          port to listen on; 0 picks a free one (default: 0)
  --data-dir <dir>    where history and logs live (default: ${defaultDataDir()})
  --concurrency <n>   tasks running at once (default: 2 per CPU core)
  --history-limit <n> finished tasks kept in history (default: 1000); older ones leave it and
                      only their counts stay in the insights
  --redis <url>       run tasks on \`backchannel worker\`s through this Redis (redis://…, rediss:// for TLS; or
                      BACKCHANNEL_REDIS_URL; a password only in REDIS_PASSWORD or the config file)
  --queue <name>      the Redis queue's name, as the workers' (default: agents)
  --keep-token        keep the token across restarts (in <data-dir>/panel-token, mode 0600), so
                      a bookmarked URL keeps working; BACKCHANNEL_PANEL_TOKEN=<token> sets one
  --agent-cpu <how>   shared (default): the agents running together weigh about one terminal
                      session on the CPU, so the hub and the desktop keep answering; full: each
                      agent weighs a whole one (Linux; docs/writing-sub-agents.md, "CPU weight")
  --demo              when history is empty, start a few demo sub-agents so the panel shows something
                      (tagged demo, so stats and Insights do not count them)
${BROKER_FLAGS_HELP.replace(/^ {2}(--\S+( <\S+>)?) +/gm, (_, flag: string) => `  ${flag.padEnd(20)}`)}
  -h, --help          show this help

Stop with Ctrl+C: running tasks are cancelled (grace period, then killed) and history is kept.`;

/** Demo tasks started by --demo: one of each kind, so every state shows up within seconds. */
const DEMO_PRESETS = ['progress', 'indeterminate', 'ask', 'fail', 'crash', 'forever', 'progress'];

const OPTIONS = {
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  concurrency: { type: 'string' },
  'history-limit': { type: 'string' },
  'agent-cpu': { type: 'string' },
  demo: { type: 'boolean' },
  redis: { type: 'string' },
  queue: { type: 'string' },
  ...BROKER_FLAGS,
  'keep-token': { type: 'boolean' },
} as const;

type Values = CommandLine<typeof OPTIONS>['values'];

/**
 * The `serve:` section of the one config file (src/config/sections.ts): each key stands in for its flag
 * when the flag is not given. `redis` is only handed to takeRedisUrl, which keeps a password off the
 * command line; the numbers are merged into `readNumbers`' result, the file's already checked.
 */
const FROM_FILE = [
  { flag: 'data-dir', key: 'data_dir' },
  { flag: 'agent-cpu', key: 'agent_cpu' },
  { flag: 'keep-token', key: 'keep_token' },
  { flag: 'queue', key: 'queue' },
] as const;

/** The numeric flags: the least (and most) each may be, as their one usage error says, and their key in the file. */
const NUMBERS = [
  { flag: 'port', key: 'port', min: 0, max: 65535, expected: 'an integer from 0 to 65535' },
  { flag: 'concurrency', key: 'concurrency', min: 1, max: Infinity, expected: 'a positive integer' },
  { flag: 'history-limit', key: 'history_limit', min: 1, max: Infinity, expected: 'a positive integer' },
] as const;

type Numbers = Partial<Record<(typeof NUMBERS)[number]['flag'], number>>;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine('serve', argv, OPTIONS, HELP);
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    const file = await fillFromConfigFile(values);
    if (typeof file === 'number') return file;
    const numbers = readNumbers(values, file);
    if (typeof numbers === 'string') return usageError(`backchannel serve: ${numbers}`, HELP);
    const agentCpu = values['agent-cpu'];
    if (agentCpu !== undefined && !isAgentCpu(agentCpu)) {
      return usageError(`backchannel serve: Expected \`--agent-cpu\` to be ${AGENT_CPU.join(' or ')}, got \`${agentCpu}\``, HELP);
    }
    const mcp = await mcpToken();
    if (typeof mcp === 'number') return mcp;
    const headless = await startHub(values, numbers, mcp.secret);
    if (typeof headless === 'number') return headless;
    if (values.demo) await startDemoTasks(headless);
    const stopped = runUntilSignal('serve', 'running tasks', () => headless.close());
    process.stdout.write(`Backchannel panel: ${headless.url}\n`);
    if (values.redis !== undefined) {
      const queue = values.queue === undefined ? '' : `, queue ${values.queue}`;
      process.stdout.write(`Fleet mode: tasks run on \`backchannel worker\`s through ${redactedUrl(values.redis)}${queue}\n`);
    }
    const mcpUrl = `http://127.0.0.1:${headless.server.port}/mcp`;
    process.stdout.write(`MCP (Streamable HTTP): ${mcpUrl}  (Authorization: Bearer <the token in ${mcp.file}>)\n`);
    // Printed once, like the gateway's key: later starts only name the file.
    if (mcp.created) process.stdout.write(`MCP bearer token (shown once): ${mcp.secret}\n`);
    process.stdout.write(`History and log: ${headless.logPath}\nPress Ctrl+C to stop.\n`);
    return stopped;
  },
};

/**
 * Unset options come from the `serve:` section of the one config file (backchannel config path): merged
 * into `values`, and the section returned for the numbers. The exit code when the file is wrong, or the
 * Redis URL is given the wrong way.
 */
async function fillFromConfigFile(values: Values): Promise<Section<'serve'> | number> {
  let file: Section<'serve'>;
  try {
    const { loadConfig } = await import('../../config/file.js');
    const { commandSection } = await import('../../config/sections.js');
    file = commandSection(loadConfig(), 'serve');
  } catch (error) {
    process.stderr.write(`backchannel serve: ${(error as Error).message}\n`);
    return EXIT.failed;
  }
  for (const { flag, key } of FROM_FILE) (values as Record<string, unknown>)[flag] ??= file[key];
  // A password on the command line is readable by every user (ps): from the file or REDIS_PASSWORD only.
  const redisUrl = takeRedisUrl(values.redis, file.redis);
  if ('problem' in redisUrl) return usageError(`backchannel serve: ${redisUrl.problem}`, HELP);
  values.redis = redisUrl.url;
  return file;
}

/** The numeric flags checked, else the file's (`--port` defaults to 0, a free port), or the usage error of the first wrong flag. */
function readNumbers(values: Values, file: Section<'serve'>): Numbers | string {
  const numbers: Numbers = { port: 0 };
  for (const { flag, key, min, max, expected } of NUMBERS) {
    const given = values[flag];
    if (given === undefined) {
      if (file[key] !== undefined) numbers[flag] = file[key];
      continue;
    }
    const value = Number(given);
    if (!Number.isInteger(value) || value < min || value > max) return `Expected \`--${flag}\` to be ${expected}, got \`${given}\``;
    numbers[flag] = value;
  }
  return numbers;
}

function isAgentCpu(value: string): value is AgentCpu {
  return (AGENT_CPU as readonly string[]).includes(value);
}

/** MCP over HTTP's bearer token, read or made (0600) in the config dir; the exit code when it cannot be. */
async function mcpToken(): Promise<McpToken | number> {
  const { readMcpToken } = await import('../../mcp/http-mount.js');
  try {
    return readMcpToken();
  } catch (error) {
    process.stderr.write(`backchannel serve: ${(error as Error).message}\n`);
    return EXIT.failed;
  }
}

/** The hub: broker, panel, MCP over HTTP and control endpoint; the exit code when it cannot start. */
async function startHub(values: Values, numbers: Numbers, mcpToken: string): Promise<Headless | number> {
  const { startHeadless } = await import('../../hub/headless/start.js');
  const { mcpHttpMounts } = await import('../../mcp/http-mount.js');
  try {
    const redis = values.redis === undefined ? undefined : { redis: values.redis, name: values.queue };
    return await startHeadless({
      port: numbers.port,
      dataDir: values['data-dir'],
      concurrency: numbers.concurrency,
      historyLimit: numbers['history-limit'],
      redis,
      broker: { ...brokerFlagOptions(values), ...(values['agent-cpu'] ? { agentCpu: values['agent-cpu'] as AgentCpu } : {}) },
      keepToken: values['keep-token'],
      mounts: mcpHttpMounts(readOwnVersion(), mcpToken),
    });
  } catch (error) {
    process.stderr.write(`backchannel serve: ${(error as Error).message}\n`);
    return EXIT.failed;
  }
}

/** `--demo`: one task of each demo preset, unless history already holds tasks. */
async function startDemoTasks(headless: Headless): Promise<void> {
  const known = (await headless.bridge.listTasks()).length;
  if (known > 0) {
    process.stdout.write(`History already holds ${known} task(s); not adding demo tasks.\n`);
    return;
  }
  const info = await headless.bridge.info();
  for (const name of DEMO_PRESETS) {
    const preset = info.presets.find((p) => p.name === name);
    // Tagged, so stats and Insights never count them among the user's own agents.
    if (preset) await headless.bridge.submit({ ...preset.request, tags: { ...preset.request.tags, [DEMO_TAG]: 'true' } });
  }
}
