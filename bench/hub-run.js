/**
 * Hub run (issue 22 item 4): `backchannel run --json` attached to a hub (`backchannel serve`, started
 * here in a private directory and found through BACKCHANNEL_CONTROL) against `run --local --json` of
 * the same agent in the same run: (a) an SDK agent returning a 10 MB result (the hub keeps it in
 * <dataDir>/results and the CLI gets it over the control endpoint), (b) a trivial SDK agent (the
 * per-task overhead of going through the hub). Each sample is one whole CLI process, spawn → exit,
 * with its stdout read to the end; the variants are interleaved.
 */
import path from 'node:path';
import { agentPath, log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { runCli, startServe } from './lib/hub.js';
import { interleave, summarize } from './lib/stats.js';
const MB = 1024 * 1024;

main(async ({ quick }) => {
  const bigRuns = quick ? 3 : 7;
  const smallRuns = quick ? 8 : 20;
  const dir = scratchDir();
  const env = {
    ...process.env,
    XDG_STATE_HOME: path.join(dir, 'state'),
    BACKCHANNEL_CONTROL: path.join(dir, 'control.sock'),
  };
  const hub = await startServe(path.join(dir, 'data'), { ...env, CURSOR_IPC_DIR: path.join(dir, 'ipc-hub') });
  try {
    const cliEnv = { ...env, CURSOR_IPC_DIR: path.join(dir, 'ipc-cli') };
    const run = (agent, local) => () => runAgentCli(agent, local, cliEnv);
    // Warm-up: page cache, the hub's first task.
    for (const local of [true, false]) {
      await run('sdk-return.mjs', local)();
      await run('sdk-big.mjs', local)();
    }
    log(`hub run: ${bigRuns} × 10 MB result, ${smallRuns} × trivial agent, hub and --local interleaved`);
    const big = await interleave(bigRuns, { local: run('sdk-big.mjs', true), hub: run('sdk-big.mjs', false) });
    const small = await interleave(smallRuns, { local: run('sdk-return.mjs', true), hub: run('sdk-return.mjs', false) });
    const stat = (samples) => ({ wall: summarize(samples.map((s) => s.ms)), bytes: samples[0].bytes });
    const b = { local: stat(big.local), hub: stat(big.hub) };
    const s = { local: stat(small.local), hub: stat(small.hub) };
    const same = 'baseline column = `run --local --json` of the same agent, same run, interleaved';
    return {
      figure: 'hub-run',
      big: b,
      small: s,
      rows: [
        row({
          fig: 'H',
          name: '`run --json` through a hub, 10 MB result: spawn → exit p50',
          unit: 'ms',
          value: b.hub.wall.p50,
          baseline: b.local.wall.p50,
          target: { op: '<=', ratio: 1.5 },
          detail: `${bigRuns} runs; p90 ${b.hub.wall.p90.toFixed(0)} vs ${b.local.wall.p90.toFixed(0)} ms; ${(b.hub.bytes / MB).toFixed(1)} MB printed; ${same}`,
        }),
        row({
          fig: 'H',
          name: '`run --json` through a hub, trivial agent: spawn → exit p50',
          unit: 'ms',
          value: s.hub.wall.p50,
          baseline: s.local.wall.p50,
          target: { op: '<=', ratio: 1.15 },
          detail: `${smallRuns} runs; p90 ${s.hub.wall.p90.toFixed(0)} vs ${s.local.wall.p90.toFixed(0)} ms; the per-task overhead of the hub: ${(s.hub.wall.p50 - s.local.wall.p50).toFixed(0)} ms; ${same}`,
        }),
      ],
    };
  } finally {
    await hub.stop();
  }
});

/** One `backchannel run --json [--local] -- node <agent>`: spawn → exit, stdout read to its end and checked. */
async function runAgentCli(agent, local, env) {
  const args = ['run', '--json', ...(local ? ['--local'] : []), '--', process.execPath, agentPath(agent)];
  const { ms, stdout } = await runCli(args, env);
  const printed = JSON.parse(stdout.toString('utf8'));
  if (printed?.status !== 'success') throw new Error(`run ${agent}: printed ${JSON.stringify(printed).slice(0, 200)}`);
  return { ms, bytes: stdout.length };
}
