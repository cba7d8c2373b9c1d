/**
 * Warm-up to a steady state, for the "memory after the run vs after warm-up" rows (figure 5, the hub
 * path). One warm-up batch was not enough: over its first few hundred tasks a broker's process grows
 * for reasons that are not kept objects — V8 sizes its young generation up to 2 × 16 MB under the
 * allocation rate and compiles optimized code for what runs hot (a heap snapshot diff between 400 and
 * 2,400 tasks: code and its deopt data, no task objects) — so an after/before ratio taken after one
 * batch measured the warming, not retention. Batches run until one leaves the measure within
 * `tolerance` of where the previous one left it (at least `minBatches`, at most `maxBatches`); the
 * figures of every batch are returned, so a row can show how it got there. The default 2% a batch is
 * what the rows' "flat within 10%" allows over a run five batches long (1.02⁵ ≈ 1.10).
 *
 * @param {() => Promise<unknown>} batch runs one warm-up batch
 * @param {() => Promise<number> | number} measure the figure that must settle (RSS, after a pause)
 * @param {{ tolerance?: number, minBatches?: number, maxBatches?: number }} [options]
 * @returns {Promise<{ figures: number[], steady: boolean }>} figures[0] is before the first batch
 */
export async function warmUntilSteady(batch, measure, { tolerance = 0.02, minBatches = 1, maxBatches = 8 } = {}) {
  const figures = [await measure()];
  for (let n = 1; n <= maxBatches; n++) {
    await batch();
    figures.push(await measure());
    const [before, after] = figures.slice(-2);
    if (n >= minBatches && after <= before * (1 + tolerance)) return { figures, steady: true };
  }
  return { figures, steady: false };
}

/** "3 warm-up batches: RSS 72 → 88 → 95 → 96 MB" (with "(not steady by then)" when it never settled). */
export function describeWarmUp({ figures, steady }, what, unit) {
  const batches = figures.length - 1;
  const path = figures.map((f) => f.toFixed(0)).join(' → ');
  return `${batches} warm-up batch${batches === 1 ? '' : 'es'}${steady ? '' : ' (not steady by then)'}: ${what} ${path} ${unit}`;
}
