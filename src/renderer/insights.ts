/**
 * The Insights view: how fast, how reliable and how costly each agent and model is. The broker
 * aggregates (bridge call `insights`); this view only draws what it gets — two uPlot charts (canvas,
 * no inline markup or styles, so they run under the panel's strict CSP) and three tables. Hovering a
 * chart shows its numbers in the legend; clicking a point, or a heatmap cell, lists the tasks behind
 * it, each of which opens.
 */
import type uPlot from 'uplot';
import type { BackchannelBridge, Figures, Insights, InsightsQuery } from '../bridge/contract.js';
import { h } from './dom.js';
import { formatDuration } from './format.js';
import { loadScript } from './lazy-script.js';

const HOUR_S = 3600;

const RANGES: Array<[string, number | undefined]> = [
  ['Last 24 hours', 24],
  ['Last 7 days', 24 * 7],
  ['Last 30 days', 24 * 30],
  ['All time', undefined],
];
const PALETTE = ['#2f6fde', '#d9480f', '#2b8a3e', '#862e9c', '#e67700', '#0b7285', '#c2255c', '#5c940d'];
const HEAT_LEVELS = 5;

export interface InsightsActions {
  open(taskId: string): void;
  error(error: unknown): void;
}

/** uPlot, from its own file (./uplot-entry.ts → uplot.js), fetched the first time a chart is drawn. */
export function loadChartLibrary(): Promise<typeof uPlot> {
  return loadScript<typeof uPlot>('uplot.js', 'backchannelUPlot');
}

const ms = (value: number | null): string => (value === null ? '–' : formatDuration(value));
const percent = (rate: number): string => `${(rate * 100).toFixed(1)}%`;
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
/** A token count for the axis and legend: 950, 12.5K, 2.5M. */
const count = (value: number | null): string => (value === null ? '–' : compact.format(value));

export class InsightsView {
  readonly root = h('section', { class: 'insights', attrs: { 'aria-label': 'Insights' } });
  private readonly range = select(
    'range',
    RANGES.map(([label], i) => [String(i), label]),
  );
  private readonly by = select('by', [
    ['agent', 'by agent'],
    ['model', 'by model'],
  ]);
  private readonly agent = select('agent', [['', 'all agents']]);
  private readonly model = select('model', [['', 'all models']]);
  private readonly charts = h('div', { class: 'insights-charts' });
  private readonly tables = h('div', { class: 'insights-tables' });
  private readonly picked = h('div', { class: 'insights-picked', attrs: { 'aria-live': 'polite' } });
  private plots: uPlot[] = [];
  private current: Insights | undefined;
  private loading: Promise<void> | undefined;
  /** Refreshes asked for and not drawn yet: while any is, the view is `aria-busy` (what it shows is about to change). */
  private pending = 0;

  constructor(
    private readonly bridge: BackchannelBridge,
    private readonly actions: InsightsActions,
  ) {
    this.range.value = '1';
    for (const control of [this.range, this.by, this.agent, this.model]) control.addEventListener('change', () => void this.refresh());
    const filters = h('div', { class: 'insights-filters' }, [this.range, this.by, this.agent, this.model]);
    this.root.append(filters, this.charts, this.picked, this.tables);
  }

  /** The query the filters describe (`now` ends the time range). */
  query(now = Date.now()): InsightsQuery {
    const hours = RANGES[Number(this.range.value)]?.[1];
    const query: InsightsQuery = { by: this.by.value === 'model' ? 'model' : 'agent' };
    if (hours !== undefined) query.since = new Date(now - hours * 3_600_000).toISOString();
    if (this.agent.value) query.agent = this.agent.value;
    if (this.model.value) query.model = this.model.value;
    return query;
  }

  /** Fetches and draws (one request at a time; a refresh asked for meanwhile follows it). */
  async refresh(): Promise<void> {
    this.pending += 1;
    this.root.setAttribute('aria-busy', 'true');
    while (this.loading) await this.loading;
    this.loading = (async () => {
      try {
        const now = Date.now();
        const query = this.query(now);
        const [insights, library] = await Promise.all([this.bridge.insights(query), loadChartLibrary()]);
        this.draw(insights, library, timeWindow(query, insights.hours, now));
      } catch (error) {
        this.actions.error(error);
      }
    })();
    await this.loading;
    this.loading = undefined;
    this.pending -= 1;
    if (this.pending === 0) this.root.setAttribute('aria-busy', 'false');
  }

  /** Frees the charts (the view was closed). */
  hide(): void {
    for (const plot of this.plots) plot.destroy();
    this.plots = [];
  }

  private draw(insights: Insights, library: typeof uPlot, window: TimeWindow): void {
    this.current = insights;
    fillOptions(this.agent, 'all agents', insights.agents);
    fillOptions(this.model, 'all models', insights.models);
    this.hide();
    this.charts.replaceChildren();
    this.root.dataset.total = String(insights.total.count);
    if (insights.total.count === 0) {
      this.charts.append(h('p', { class: 'insights-empty', text: 'No finished tasks in this range yet.' }));
      this.tables.replaceChildren();
      return;
    }
    this.plots.push(this.chart(library, 'Duration p95', insights, window, (s) => s.p95, ms));
    const tokens = (s: Insights['series'][number]) => s.tokensIn.map((n, i) => (s.count[i] ? n + (s.tokensOut[i] ?? 0) : null));
    this.plots.push(this.chart(library, 'Tokens (input + output)', insights, window, tokens, count));
    this.tables.replaceChildren(
      section('Per ' + insights.by, groupsTable(insights)),
      insights.ab.length > 0 ? section('A/B: the same label, side by side', abTable(insights)) : '',
      section('p95 duration by agent and hour', this.heatmap(insights)),
    );
  }

  private chart(
    library: typeof uPlot,
    title: string,
    insights: Insights,
    window: TimeWindow,
    values: (series: Insights['series'][number]) => (number | null)[],
    format: (value: number | null) => string,
  ): uPlot {
    const xs = insights.hours.map((hour) => Date.parse(hour) / 1000);
    const data: uPlot.AlignedData = [xs, ...insights.series.map(values)];
    const series: uPlot.Series[] = [
      {},
      ...insights.series.map((s, i) => ({
        label: s.key,
        stroke: PALETTE[i % PALETTE.length],
        width: 2,
        points: { show: true, size: 6 },
        spanGaps: false,
        value: (_u: uPlot, v: number | null) => format(v),
      })),
    ];
    if (insights.budget && title.startsWith('Tokens')) {
      const perHour = insights.budget.refillPerSecond * 3600;
      data.push(xs.map(() => perHour));
      series.push({ label: 'budget / hour', stroke: '#868e96', dash: [4, 4], width: 1, points: { show: false } });
    }
    const box = h('figure', { class: 'insights-chart', attrs: { 'data-chart': title } }, [h('figcaption', { text: title })]);
    this.charts.append(box);
    // Two charts side by side when the panel is wide enough.
    const width = Math.max(320, Math.min(720, Math.floor(((this.root.clientWidth || 700) - 56) / 2)));
    const options: uPlot.Options = {
      width,
      height: 200,
      series,
      // The range asked for, not uPlot's own span: for a single point that is a thousand days.
      scales: { x: { time: true, range: () => [window.from, window.to] } },
      axes: [{}, { size: axisWidth, values: (_u, ticks) => tickLabels(ticks, format) }],
      cursor: { focus: { prox: 24 } },
      legend: { live: true },
      hooks: { setScale: [(u, key) => key === 'x' && markRange(box, u.scales.x)] },
    };
    const plot = new library(options, data, box);
    let focused: number | null = null;
    plot.over.addEventListener('click', () => {
      const index = plot.cursor.idx;
      const hour = index === null || index === undefined ? undefined : insights.hours[index];
      if (!hour) return;
      const key = focused !== null && focused > 0 ? insights.series[focused - 1]?.key : undefined;
      void this.pick(hour, key);
    });
    plot.hooks.setSeries = [(_u, index) => (focused = index)];
    return plot;
  }

  private heatmap(insights: Insights): HTMLTableElement {
    const peak = Math.max(1, ...insights.heatmap.p95.flat().map((v) => v ?? 0));
    const head = h('tr', {}, [h('th', { text: 'agent' }), ...insights.hours.map((hour) => h('th', { text: hourLabel(hour) }))]);
    const rows = insights.heatmap.agents.map((agent, row) =>
      h('tr', {}, [
        h('th', { class: 'key', text: agent, title: agent }),
        ...insights.hours.map((hour, column) => {
          const value = insights.heatmap.p95[row]?.[column] ?? null;
          if (value === null) return h('td', { class: 'heat-none' });
          const level = Math.min(HEAT_LEVELS - 1, Math.floor((value / peak) * HEAT_LEVELS));
          return h('td', {
            class: `heat heat-${level}`,
            text: ms(value),
            title: `${agent}, ${hourLabel(hour)}: p95 ${ms(value)} — click for the tasks`,
            on: { click: () => void this.pick(hour, insights.by === 'agent' ? agent : undefined, agent) },
          });
        }),
      ]),
    );
    return h('table', { class: 'heatmap' }, [h('thead', {}, [head]), h('tbody', {}, rows)]);
  }

  /** Lists the tasks behind one point (`agent` narrows a heatmap cell when grouping by model). */
  private async pick(hour: string, key: string | undefined, agent?: string): Promise<void> {
    try {
      const query = { ...this.query(), ...(agent ? { agent } : {}), pick: { hour, ...(key ? { key } : {}) } };
      const { taskIds = [] } = await this.bridge.insights(query);
      const title = `${hourLabel(hour)}${key ? ` · ${key}` : ''}: ${taskIds.length} task(s) still in history`;
      const buttons = taskIds.map((id) =>
        h('li', {}, [
          h('button', {
            class: 'link',
            text: id,
            attrs: { type: 'button', 'data-task-id': id },
            on: { click: () => this.actions.open(id) },
          }),
        ]),
      );
      this.picked.replaceChildren(h('h3', { text: title }), h('ul', { class: 'picked-tasks' }, buttons));
    } catch (error) {
      this.actions.error(error);
    }
  }

  /** The insights last drawn (tests and the panel read them). */
  get shown(): Insights | undefined {
    return this.current;
  }
}

/** Labels for the y-axis' ticks; where the short form would repeat a label (3.8M, 3.8M), whole numbers. */
function tickLabels(ticks: number[], format: (value: number | null) => string): string[] {
  const labels = ticks.map((t) => format(t));
  return new Set(labels).size === labels.length ? labels : ticks.map((t) => t.toLocaleString('en'));
}

/** The y-axis' width: its longest label (about 7 px a character at the panel's 13 px font) and room for the ticks. */
function axisWidth(_u: uPlot, values: string[] | null): number {
  return Math.max(48, 20 + 7 * Math.max(0, ...(values ?? []).map((v) => v.length)));
}

/** The x-axis' span in seconds since the epoch (uPlot's time unit). */
interface TimeWindow {
  from: number;
  to: number;
}

/**
 * What the charts' x-axis spans: the chosen range (its first hour whole, so the bucket of that hour
 * is drawn) up to now; for "All time", the hours with data plus one, and at least two hours.
 */
function timeWindow(query: InsightsQuery, hours: readonly string[], now: number): TimeWindow {
  const to = Math.ceil(now / 1000);
  if (query.since !== undefined) return { from: Math.floor(Date.parse(query.since) / 1000 / HOUR_S) * HOUR_S, to };
  const first = hours.length > 0 ? Date.parse(hours[0]!) / 1000 : to - HOUR_S;
  const last = hours.length > 0 ? Date.parse(hours[hours.length - 1]!) / 1000 + HOUR_S : to;
  const pad = Math.max(0, 2 * HOUR_S - (last - first)) / 2;
  return { from: first - pad, to: last + pad };
}

/** The x-axis' span as ISO times on the figure (`data-x-from`, `data-x-to`): what the canvas shows, readable by tests. */
function markRange(box: HTMLElement, scale: uPlot.Scale | undefined): void {
  if (typeof scale?.min !== 'number' || typeof scale.max !== 'number') return;
  box.dataset.xFrom = new Date(scale.min * 1000).toISOString();
  box.dataset.xTo = new Date(scale.max * 1000).toISOString();
}

function select(name: string, options: Array<[string, string]>): HTMLSelectElement {
  const el = h('select', { attrs: { name, 'aria-label': name } });
  for (const [value, label] of options) el.append(h('option', { text: label, attrs: { value } }));
  return el;
}

function fillOptions(el: HTMLSelectElement, all: string, values: string[]): void {
  const chosen = el.value;
  el.replaceChildren(h('option', { text: all, attrs: { value: '' } }), ...values.map((v) => h('option', { text: v, attrs: { value: v } })));
  el.value = values.includes(chosen) ? chosen : '';
}

function section(title: string, body: Node | string): HTMLElement {
  return h('section', {}, [h('h3', { text: title }), body]);
}

function hourLabel(iso: string): string {
  const date = new Date(iso);
  return `${date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${String(date.getHours()).padStart(2, '0')}:00`;
}

const FIGURE_COLUMNS = ['tasks', 'success', 'p50', 'p95', 'p99', 'failures', 'tokens in', 'tokens out', 'tokens/task'];
/** The failure reasons a figures row names (`protocol` is counted with `error`). */
const FAILURES = ['error', 'timeout', 'stalled', 'crashed', 'cancelled', 'budget_exceeded'] as const;

/** "11 timeout · 7 error": the reasons that occurred, most frequent first; "–" for none. */
function failuresText(f: Figures): string {
  const counts = FAILURES.map((reason) => [reason, f.outcomes[reason] + (reason === 'error' ? f.outcomes.protocol : 0)] as const);
  const occurred = counts.filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  return occurred.length > 0 ? occurred.map(([reason, n]) => `${n} ${reason}`).join(' · ') : '–';
}

function figureCells(f: Figures): string[] {
  return [
    String(f.count),
    percent(f.successRate),
    ms(f.p50),
    ms(f.p95),
    ms(f.p99),
    failuresText(f),
    String(f.tokensIn),
    String(f.tokensOut),
    f.tokensPerTask.toFixed(0),
  ];
}

function table(head: string[], rows: Array<{ key: string; cells: string[] }>): HTMLTableElement {
  return h('table', { class: 'figures' }, [
    h('thead', {}, [
      h(
        'tr',
        {},
        head.map((text) => h('th', { text, attrs: { 'data-column': text } })),
      ),
    ]),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h('tr', { attrs: { 'data-key': row.key } }, [
          h('th', { class: 'key', text: row.key, title: row.key }),
          ...row.cells.map((text, i) => h('td', { text, attrs: { 'data-column': head[i + 1] ?? '' } })),
        ]),
      ),
    ),
  ]);
}

function groupsTable(insights: Insights): HTMLTableElement {
  const rows = insights.groups.map((f) => ({ key: f.key, cells: figureCells(f) }));
  rows.push({ key: 'all', cells: figureCells(insights.total) });
  return table([insights.by, ...FIGURE_COLUMNS], rows);
}

function abTable(insights: Insights): HTMLTableElement {
  const rows = insights.ab.map((row) => ({
    key: `${row.label} · ${row.figures.key}`,
    cells: [
      row.kind,
      String(row.figures.count),
      percent(row.figures.successRate),
      ms(row.figures.p50),
      ms(row.figures.p95),
      row.figures.tokensPerTask.toFixed(0),
    ],
  }));
  return table(['label · variant', 'kind', 'tasks', 'success', 'p50', 'p95', 'tokens/task'], rows);
}
