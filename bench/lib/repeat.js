/**
 * `npm run bench -- --repeat n` (bench/run.js): one result from n runs of a module. Each row is the
 * run whose ratio (else value) is the median, with the min/median/max over the runs in `spread` and
 * its notes. A run that failed makes the module an error.
 */
export function combineRepeats(runs) {
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  const failed = runs.find((r) => r.error);
  if (failed) return { ...failed, seconds };
  const key = (r) => `${r.fig} ${r.name}`;
  const rows = runs[0].rows.map((first) => {
    const same = runs.map((r) => r.rows.find((x) => key(x) === key(first))).filter(Boolean);
    const by = Number.isFinite(first.ratio) ? 'ratio' : 'value';
    const sorted = [...same].sort((a, b) => a[by] - b[by]);
    const mid = sorted[Math.floor((sorted.length - 1) / 2)];
    if (!Number.isFinite(mid[by])) return mid;
    const spread = { of: by, min: sorted[0][by], median: mid[by], max: sorted[sorted.length - 1][by] };
    const shown = (v) => (by === 'ratio' ? `${v.toFixed(2)}×` : v.toFixed(2));
    const note = `${same.length} repeats, ${by} min/median/max ${shown(spread.min)} / ${shown(spread.median)} / ${shown(spread.max)}`;
    return { ...mid, spread, detail: mid.detail ? `${note}; ${mid.detail}` : note };
  });
  return { ...runs[Math.floor((runs.length - 1) / 2)], rows, repeats: runs.length, seconds };
}
