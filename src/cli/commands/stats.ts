/**
 * `backchannel stats`: the panel's insights in the terminal, and the figures of each schedule, through
 * the client (`readStats`) as every command: from the hub of the data directory when one runs, else
 * from its history on disk, read-only (a data directory without schedules gets no `schedules/`
 * directory from it; one whose broker holds it is read all the same).
 */
import type { CliCommand } from '../command.js';
import { EXIT, parseCommandLine, usageError } from '../command.js';
import { writeText } from '../terminal-text.js';
import { defaultDataDir } from '../../paths/data-dir.js';
import { openClient, readStats, SKIP_REASONS, type ScheduleStats, type StatsReport } from '../../client/index.js';
import { formatUsd } from '../../model/usage.js';
import { formatDuration } from '../../model/duration.js';
import { OUTCOMES, type AbRow, type Figures, type Insights, type InsightsQuery } from '../../model/insights.js';

const HELP = `Usage: backchannel stats [options]

Prints how fast, how reliable and how costly each sub-agent (or model) has been: task count, success
rate, duration p50/p95/p99, outcomes, tokens — then an A/B table of labels run by more than one model,
then each schedule: its fires, how its runs ended, its skipped fires by reason, tokens and cost.
Asks the hub of --data-dir when one runs, else reads its history; tasks that left history (retention)
still count (a schedule's run whose task left it counts as \`gone\`). --since/--until count a
schedule's fires by their fire time.

Options:
  --since <when>      only tasks that ended since: 30m, 24h, 7d, or an ISO 8601 time (default: all)
  --until <when>      only tasks that ended before (same forms)
  --by agent|model    one row per agent (template or script) or per model (default: agent)
  --agent <name>      only this agent
  --model <name>      only this model
  --json              print the insights as one JSON object
  --csv               print the rows as CSV
  --data-dir <dir>    the data directory: its hub's figures, or its history's (default: ${defaultDataDir()})
  -h, --help          show this help`;

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** `7d` → the ISO time seven days ago; an ISO time stays itself; undefined when neither. */
export function parseWhen(text: string, now = Date.now()): string | undefined {
  const relative = /^(\d+(?:\.\d+)?)([mhdw])$/.exec(text);
  if (relative) return new Date(now - Number(relative[1]) * UNITS[relative[2]!]!).toISOString();
  const time = Date.parse(text);
  return Number.isFinite(time) ? new Date(time).toISOString() : undefined;
}

/** A duration as the panel writes it (one formatter for both); `-` for none. */
export function formatMs(ms: number | null): string {
  return ms === null ? '-' : formatDuration(ms);
}

const COLUMNS = ['tasks', 'ok%', 'p50', 'p95', 'p99', ...OUTCOMES.filter((o) => o !== 'success'), 'tokens_in', 'tokens_out', 'tokens/task'];

function cells(f: Figures): string[] {
  return [
    String(f.count),
    (f.successRate * 100).toFixed(1),
    formatMs(f.p50),
    formatMs(f.p95),
    formatMs(f.p99),
    ...OUTCOMES.filter((o) => o !== 'success').map((o) => String(f.outcomes[o])),
    String(f.tokensIn),
    String(f.tokensOut),
    f.tokensPerTask.toFixed(0),
  ];
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')).join('\n');
}

function abTable(rows: AbRow[]): string {
  return table([['label', 'variant', 'tasks', 'ok%', 'p50', 'p95', 'tokens/task'], ...rows.map(abCells)]);
}

function abCells(row: AbRow): string[] {
  const f = row.figures;
  return [
    row.label,
    `${row.kind} ${f.key}`,
    String(f.count),
    (f.successRate * 100).toFixed(1),
    formatMs(f.p50),
    formatMs(f.p95),
    f.tokensPerTask.toFixed(0),
  ];
}

function csvField(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** One row per group, raw numbers (milliseconds, rates 0–1). */
export function toCsv(insights: Insights): string {
  const header = [insights.by, 'tasks', 'success_rate', 'p50_ms', 'p95_ms', 'p99_ms', ...OUTCOMES, 'tokens_in', 'tokens_out'];
  const rows = insights.groups.map((f) => [
    f.key,
    f.count,
    f.successRate,
    f.p50 ?? '',
    f.p95 ?? '',
    f.p99 ?? '',
    ...OUTCOMES.map((o) => f.outcomes[o]),
    f.tokensIn,
    f.tokensOut,
  ]);
  return [header, ...rows].map((row) => row.map((v) => csvField(String(v))).join(',')).join('\n') + '\n';
}

export function toText(insights: Insights): string {
  if (insights.total.count === 0) return 'No finished tasks in this range.\n';
  const parts = [
    table([[insights.by, ...COLUMNS], ...insights.groups.map((f) => [f.key, ...cells(f)]), ['all', ...cells(insights.total)]]),
  ];
  if (insights.ab.length > 0) parts.push(`A/B (labels run by more than one ${insights.ab[0]!.kind}):\n${abTable(insights.ab)}`);
  const guard = insights.bridgeGuard;
  if (guard)
    parts.push(
      `Bridge mode's scratch-path guard: ${guard.violations} tool call(s) named the scratch workspace, ${guard.corrections} corrected; ${guard.unknown_tools} call(s) to tools the client did not offer; ${guard.replays} run(s) replayed to a new agent.`,
    );
  if (insights.approvals) {
    const rows = insights.approvals.map((a) => [a.agent, String(a.asked), String(a.allowed), String(a.rejected), String(a.unanswered)]);
    parts.push(`ACP approvals (docs/acp.md):\n${table([['agent', 'asked', 'allowed', 'rejected', 'unanswered'], ...rows])}`);
  }
  if (insights.archived > 0) parts.push(`(${insights.archived} of these tasks have left history; their figures are kept.)`);
  return parts.join('\n\n') + '\n';
}

const SCHEDULE_COLUMNS = ['fires', 'runs', 'ok', 'failed', 'cancelled', 'active', 'gone', ...SKIP_REASONS, 'tokens', 'cost'];

/** The schedules' table: fires, runs by how they ended, skips by reason, tokens and cost. */
export function schedulesText(schedules: readonly ScheduleStats[]): string {
  if (schedules.length === 0) return '';
  const rows = schedules.map((s) => [
    s.schedule,
    ...[s.fires, s.runs, s.succeeded, s.failed, s.cancelled, s.active, s.unknown].map(String),
    ...SKIP_REASONS.map((reason) => String(s.skipped[reason])),
    String(s.tokens),
    `$${formatUsd(s.costUsd)}`,
  ]);
  return `Schedules (skipped fires by reason):\n${table([['schedule', ...SCHEDULE_COLUMNS], ...rows])}\n`;
}

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'stats',
      argv,
      {
        since: { type: 'string' },
        until: { type: 'string' },
        by: { type: 'string' },
        agent: { type: 'string' },
        model: { type: 'string' },
        json: { type: 'boolean' },
        csv: { type: 'boolean' },
        'data-dir': { type: 'string' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    const query: InsightsQuery = {};
    for (const name of ['since', 'until'] as const) {
      const text = values[name];
      if (text === undefined) continue;
      const when = parseWhen(text);
      if (!when)
        return usageError(`backchannel stats: Expected \`--${name}\` to be like 7d, 24h, 30m or an ISO 8601 time, got \`${text}\``, HELP);
      query[name] = when;
    }
    if (values.by !== undefined && values.by !== 'agent' && values.by !== 'model') {
      return usageError(`backchannel stats: Expected \`--by\` to be agent or model, got \`${values.by}\``, HELP);
    }
    if (values.json && values.csv) return usageError('backchannel stats: choose one of --json and --csv', HELP);
    if (values.by) query.by = values.by;
    if (values.agent !== undefined) query.agent = values.agent;
    if (values.model !== undefined) query.model = values.model;
    let report: StatsReport;
    try {
      report = await statsOf(values['data-dir'], query);
    } catch (error) {
      process.stderr.write(`backchannel stats: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    const { insights, schedules } = report;
    if (values.json) process.stdout.write(JSON.stringify({ ...insights, schedules }) + '\n');
    // Labels and model names are agent text: neutralised on a terminal (--json stays exact).
    else if (values.csv) writeText(process.stdout, toCsv(insights));
    else writeText(process.stdout, [toText(insights), schedulesText(schedules)].filter(Boolean).join('\n'));
    return EXIT.ok;
  },
};

/** The figures of the hub of `dataDir` (the default one when not given), else of its history on disk. */
async function statsOf(dataDir: string | undefined, query: InsightsQuery): Promise<StatsReport> {
  const client = await openClient({ withoutHub: 'history', readHeld: true, ...(dataDir === undefined ? {} : { dataDir }) });
  try {
    return await readStats(client, query);
  } finally {
    await client.close();
  }
}
