/** `backchannel serve`: the task panel and its API on 127.0.0.1, for machines without a display. */
import type { CliCommand } from '../command.js';
import { EXIT, parseCommandLine, runUntilSignal, usageError } from '../command.js';
import { DEMO_TAG } from '../../model/task.js';
import { BROKER_FLAGS, BROKER_FLAGS_HELP, brokerFlagOptions } from '../broker-flags.js';
import { defaultDataDir } from '../../paths/data-dir.js';
import { takeRedisUrl } from '../../fleet/redis-url.js';

const HELP = `Usage: backchannel serve [options]

Serves the task panel and its API on 127.0.0.1 and prints the URL to open. Only that URL works:
it carries a token that is new on every start, unless --keep-token or BACKCHANNEL_PANEL_TOKEN.

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
  --demo              when history is empty, start a few demo sub-agents so the panel shows something
                      (tagged demo, so stats and Insights do not count them)
${BROKER_FLAGS_HELP.replace(/^ {2}(--\S+( <\S+>)?) +/gm, (_, flag: string) => `  ${flag.padEnd(20)}`)}
  -h, --help          show this help

Stop with Ctrl+C: running tasks are cancelled (grace period, then killed) and history is kept.`;

/** Demo tasks started by --demo: one of each kind, so every state shows up within seconds. */
const DEMO_PRESETS = ['progress', 'indeterminate', 'ask', 'fail', 'crash', 'forever', 'progress'];

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'serve',
      argv,
      {
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        concurrency: { type: 'string' },
        'history-limit': { type: 'string' },
        demo: { type: 'boolean' },
        redis: { type: 'string' },
        queue: { type: 'string' },
        ...BROKER_FLAGS,
        'keep-token': { type: 'boolean' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    // Unset options come from the `serve:` section of the one config file (backchannel config path).
    let file: Record<'port' | 'dataDir' | 'concurrency' | 'historyLimit' | 'keepToken' | 'redis' | 'queue', unknown>;
    try {
      const { loadConfig, setting } = await import('../../config/file.js');
      const config = loadConfig();
      file = {
        port: setting(config, 'serve', 'port', 'integer'),
        dataDir: setting(config, 'serve', 'data_dir', 'string'),
        concurrency: setting(config, 'serve', 'concurrency', 'integer'),
        historyLimit: setting(config, 'serve', 'history_limit', 'integer'),
        keepToken: setting(config, 'serve', 'keep_token', 'boolean'),
        redis: setting(config, 'serve', 'redis', 'string'),
        queue: setting(config, 'serve', 'queue', 'string'),
      };
    } catch (error) {
      process.stderr.write(`backchannel serve: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    values.port ??= file.port === undefined ? undefined : String(file.port);
    values['data-dir'] ??= file.dataDir as string | undefined;
    values.concurrency ??= file.concurrency === undefined ? undefined : String(file.concurrency);
    values['history-limit'] ??= file.historyLimit === undefined ? undefined : String(file.historyLimit);
    values['keep-token'] ??= file.keepToken as boolean | undefined;
    // A password on the command line is readable by every user (ps): from the file or REDIS_PASSWORD only.
    const redisUrl = takeRedisUrl(values.redis, file.redis as string | undefined);
    if ('problem' in redisUrl) return usageError(`backchannel serve: ${redisUrl.problem}`, HELP);
    values.redis = redisUrl.url;
    values.queue ??= file.queue as string | undefined;
    const port = values.port === undefined ? 0 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return usageError(`backchannel serve: Expected \`--port\` to be an integer from 0 to 65535, got \`${values.port}\``, HELP);
    }
    const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
    if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) {
      return usageError(`backchannel serve: Expected \`--concurrency\` to be a positive integer, got \`${values.concurrency}\``, HELP);
    }
    const historyLimit = values['history-limit'] === undefined ? undefined : Number(values['history-limit']);
    if (historyLimit !== undefined && (!Number.isInteger(historyLimit) || historyLimit < 1)) {
      return usageError(
        `backchannel serve: Expected \`--history-limit\` to be a positive integer, got \`${values['history-limit']}\``,
        HELP,
      );
    }

    const { startHeadless } = await import('../../hub/headless/start.js');
    let headless;
    try {
      const redis = values.redis === undefined ? undefined : { redis: values.redis, name: values.queue };
      headless = await startHeadless({
        port,
        dataDir: values['data-dir'],
        concurrency,
        historyLimit,
        redis,
        broker: brokerFlagOptions(values),
        keepToken: values['keep-token'],
      });
    } catch (error) {
      process.stderr.write(`backchannel serve: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    if (values.demo) {
      const known = (await headless.bridge.listTasks()).length;
      if (known > 0) {
        process.stdout.write(`History already holds ${known} task(s); not adding demo tasks.\n`);
      } else {
        const info = await headless.bridge.info();
        for (const name of DEMO_PRESETS) {
          const preset = info.presets.find((p) => p.name === name);
          // Tagged, so stats and Insights never count them among the user's own agents.
          if (preset) await headless.bridge.submit({ ...preset.request, tags: { ...preset.request.tags, [DEMO_TAG]: 'true' } });
        }
      }
    }
    const stopped = runUntilSignal('serve', 'running tasks', () => headless.close());
    process.stdout.write(`Backchannel panel: ${headless.url}\n`);
    process.stdout.write(`History and log: ${headless.logPath}\nPress Ctrl+C to stop.\n`);
    return stopped;
  },
};
