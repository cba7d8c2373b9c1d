/**
 * The chart library as a file of its own (dist/renderer/uplot.js), loaded by the Insights view the
 * first time it draws (./insights.ts, `loadChartLibrary`): the panel's first paint does not pay for
 * parsing it and for its start-up work (its number and time-zone formatters cost ~70 ms there on a
 * loaded machine: docs/performance.md § the panel's first paint over a big history).
 */
import uPlot from 'uplot';

(window as unknown as { backchannelUPlot: typeof uPlot }).backchannelUPlot = uPlot;
