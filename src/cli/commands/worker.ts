/** `backchannel worker`: runs sub-agents from a Redis queue on this machine (docs/scale-out.md). */
import path from 'node:path';
import type { CliCommand } from '../command.js';
import { EXIT, parseCommandLine, runUntilSignal, usageError } from '../command.js';
import { createHeadlessLogger } from '../../broker/log.js';
import { AllowList, takeRedisUrl, FleetWorker, redactedUrl, REDIS_URL_ENV, type AllowedCommand } from '../../fleet/index.js';
import { loadPresets } from '../../templates/presets.js';

const HELP = `Usage: backchannel worker [--redis <url>] [options]

Takes sub-agent tasks from a Redis queue (filled by \`backchannel serve --redis\` or a TaskBroker with
a Redis queue) and runs each here, with the same socket protocol, guards and process-tree kill as a
local broker. Only allowed commands run: a job naming a preset runs this worker's own copy of a
preset of --presets (and nothing else); any other job runs only when its command line starts
with an entry of --allow. A refused job fails its task with reason \`refused\`.

Options:
  --redis <url>          redis://[user@]host[:port][/db], or rediss:// for TLS (required, or BACKCHANNEL_REDIS_URL);
                         no password here (ps shows it to every user): give it in REDIS_PASSWORD
  --name <name>          this worker's name in the panel (default: <host>-<pid>)
  --queue <name>         queue name, as the broker's (default: agents)
  --concurrency <n>      sub-agents at once (default: 2 per CPU core)
  --allow <command>      an allowed command line prefix, e.g. "node /opt/agents/review.mjs" (repeatable)
  --presets <dir>        allow the presets <dir> holds: the demo agents of <dir>/demo-agents.json and
                         the templates <dir>/<name>/template.json, each run in its own directory
  --templates <dir>      deprecated: the old name of --presets
  --lock-timeout <ms>    a job whose worker is silent this long is failed as stalled (default: 30000)
  -h, --help             show this help

Stop with Ctrl+C: running sub-agents are cancelled (grace period, then killed).`;

function positiveInteger(text: string | undefined, fallback: number | undefined): number | undefined | false {
  if (text === undefined) return fallback;
  const value = Number(text);
  return Number.isInteger(value) && value > 0 ? value : false;
}

/**
 * What the directory holds, and nothing else: its demo agents (demo-agents.json) and its templates
 * (<name>/template.json), each a preset that jobs name, run in its own directory.
 */
function presetEntries(dirArg: string): AllowedCommand[] {
  const dir = path.resolve(dirArg);
  const presets = loadPresets(dir, (message) => process.stderr.write(`backchannel worker: ${message}\n`), dir);
  return presets.map(({ name, request }) => ({ argv: [request.command, ...(request.args ?? [])], cwd: request.cwd ?? dir, preset: name }));
}

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'worker',
      argv,
      {
        redis: { type: 'string' },
        name: { type: 'string' },
        queue: { type: 'string' },
        concurrency: { type: 'string' },
        allow: { type: 'string', multiple: true },
        presets: { type: 'string' },
        templates: { type: 'string' },
        'lock-timeout': { type: 'string' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    const redis = takeRedisUrl(values.redis, undefined);
    if ('problem' in redis) return usageError(`backchannel worker: ${redis.problem}`, HELP);
    if (!redis.url) return usageError(`backchannel worker: \`--redis <url>\` is required (or ${REDIS_URL_ENV})`, HELP);
    const concurrency = positiveInteger(values.concurrency, undefined);
    if (concurrency === false) return usageError(`backchannel worker: Expected \`--concurrency\` to be a positive integer`, HELP);
    const lockDurationMs = positiveInteger(values['lock-timeout'], undefined);
    if (lockDurationMs === false) return usageError(`backchannel worker: Expected \`--lock-timeout\` to be a positive integer`, HELP);
    if (values.templates !== undefined) {
      if (values.presets !== undefined)
        return usageError('backchannel worker: give `--presets <dir>` only (`--templates` is its old name)', HELP);
      process.stderr.write('backchannel worker: `--templates` is deprecated; use `--presets <dir>` (the same directory)\n');
    }
    const presetsDir = values.presets ?? values.templates;
    const entries: AllowedCommand[] = [...AllowList.parse(values.allow ?? []), ...(presetsDir ? presetEntries(presetsDir) : [])];
    if (entries.length === 0)
      return usageError('backchannel worker: nothing allowed to run: give `--allow <command>` or `--presets <dir>`', HELP);

    let worker: FleetWorker;
    try {
      worker = new FleetWorker({
        redis: redis.url,
        name: values.queue,
        workerName: values.name,
        concurrency,
        lockDurationMs,
        allow: new AllowList(entries),
        logger: createHeadlessLogger({ console: 'warn' }),
      });
      await worker.start();
    } catch (error) {
      process.stderr.write(`backchannel worker: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    const stopped = runUntilSignal('worker', 'running sub-agents', () => worker.close(true));
    process.stdout.write(
      `Backchannel worker ${worker.name}: taking tasks from ${redactedUrl(redis.url)} (${entries.length} allowed commands)\n`,
    );
    return stopped;
  },
};
