/** Renders the rows of every benchmark as one console table and as Markdown. */

const UNIT_FORMAT = {
  'msg/s': (v) => (v >= 1e6 ? `${(v / 1e6).toFixed(2)}M` : `${(v / 1e3).toFixed(1)}k`),
  ms: (v) => (v >= 100 ? v.toFixed(0) : v.toFixed(1)),
  µs: (v) => v.toFixed(0),
  MB: (v) => v.toFixed(1),
  fds: (v) => v.toFixed(0),
  'tasks/s': (v) => v.toFixed(1),
  tasks: (v) => v.toFixed(0),
  fps: (v) => v.toFixed(1),
  '/s': (v) => v.toFixed(2),
};

export function formatValue(value, unit) {
  if (value === undefined || value === null) return '—';
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return '—';
  return `${(UNIT_FORMAT[unit] ?? ((v) => v.toFixed(2)))(value)} ${unit}`;
}

export function formatTarget(target) {
  return target ? `${target.op === '<=' ? '≤' : '≥'} ${Number(target.ratio.toFixed(2))}×` : '—';
}

export function formatResult(row) {
  if (row.status) return row.status;
  if (!row.target) return 'info';
  if (row.pass === undefined) return 'n/a';
  return row.pass ? 'PASS' : 'MISS';
}

function cells(row) {
  return [
    row.fig,
    row.name,
    formatValue(row.value, row.unit),
    formatValue(row.baseline, row.unit),
    Number.isFinite(row.ratio) ? `${row.ratio.toFixed(2)}×` : '—',
    formatTarget(row.target),
    formatResult(row),
  ];
}

const HEADER = ['#', 'Measure', 'Broker', 'Baseline (same run)', 'Ratio', 'Target', 'Result'];

export function consoleTable(rows) {
  const table = [HEADER, ...rows.map(cells)];
  const widths = HEADER.map((_, i) => Math.max(...table.map((r) => [...r[i]].length)));
  const line = (r) => r.map((c, i) => c + ' '.repeat(widths[i] - [...c].length)).join(' │ ');
  const rule = widths.map((w) => '─'.repeat(w)).join('─┼─');
  const notes = rows.filter((r) => r.detail).map((r) => `  [${r.fig}] ${r.name}: ${r.detail}`);
  return [line(HEADER), rule, ...table.slice(1).map(line), '', ...notes].join('\n');
}

export function markdownTable(rows) {
  const esc = (s) => String(s).replaceAll('|', '\\|');
  const head = [...HEADER, 'Notes'];
  const out = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of rows) out.push(`| ${[...cells(r), r.detail ?? ''].map(esc).join(' | ')} |`);
  return out.join('\n');
}
