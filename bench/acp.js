/**
 * ACP agents through Backchannel (issue 44, docs/acp.md), with the scriptable fixture ACP agent
 * (test/fixtures/acp/agent.mjs, the SDK's agent side) so the agent's own time is the same everywhere:
 * - overhead, as a library: one prompt up to `end_turn` driven by Backchannel (a task with `acp: true`
 *   in a broker of this process: the ACP adapter, dist/acp/main.js, between the broker and the agent)
 *   vs driven directly by the SDK's client side in this process (initialize, session/new, prompt).
 *   Both clocks start before the agent's spawn; neither includes this process's start. The SDK is
 *   already loaded here, so the baseline never pays for it; the broker keeps a spare adapter ready
 *   (the warm adapter, src/broker/acp/spare.ts), so neither does the task. Target ≤ 1.1×. The same
 *   with the adapter started per task (`acp.warm: false`, as before the warm adapter) in the same
 *   run, and the CPU per prompt of all three ways, the spares' starts included. A peer row: the same prompt by
 *   `acpx exec` (acpx@0.19.1, installed into `.cache/clients/` at bench time; skipped with the reason
 *   when npm cannot install it).
 * - overhead, as a program (like with like): `backchannel run --local --acp` (the CLI's start, its
 *   broker, the adapter) vs `node bench/agents/acp-client.mjs` (Node's start, the SDK's load, then the
 *   same prompt), each spawn → exit.
 * - the approval round trip on a hub (`backchannel serve`): from the question reaching the client
 *   to the agent's next question, the answer given by `backchannel answer` (a process per answer, as
 *   a person's terminal would), for an ACP permission request vs a plain `task.ask` of an SDK agent
 *   (bench/agents/sdk-ask.mjs) answered the same way: p50 and p99.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { PROTOCOL_VERSION, client, methods, ndJsonStream } from '@agentclientprotocol/sdk';
import { TaskBroker, silentLogger } from '../dist/broker/index.js';
import { openClient } from '../dist/client/index.js';
import { REPO_DIR, agentPath, log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { CLI, startServe } from './lib/hub.js';
import { interleave, summarize } from './lib/stats.js';

const FIXTURE = path.join(REPO_DIR, 'test/fixtures/acp/agent.mjs');
const CLIENT = agentPath('acp-client.mjs');
const ACPX = ['acpx', '0.19.1'];

main(async ({ quick }) => {
  const dir = scratchDir('bcb-acp-');
  const overhead = await overheadRows(dir, quick ? 6 : 20);
  const programs = await programRows(dir, quick ? 6 : 15);
  const approvals = await approvalRows(dir, quick ? 15 : 60);
  return { figure: 'acp', rows: [...overhead, ...programs, ...approvals] };
});

/** One prompt to `end_turn` directly through the SDK's client: spawn → prompt response, then the agent's exit. */
async function direct(cwd) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [FIXTURE], {
    cwd,
    stdio: ['pipe', 'pipe', 'ignore'],
    env: { ...process.env, ACP_FIXTURE_STATE: cwd },
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = client({ name: 'bench' }).onNotification(methods.client.session.update, () => {});
  const response = await app.connectWith(stream, async (cx) => {
    await cx.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
    const { sessionId } = await cx.request(methods.agent.session.new, { cwd, mcpServers: [] });
    return cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
  });
  if (response.stopReason !== 'end_turn') throw new Error(`direct: stopped with ${response.stopReason}`);
  const ms = performance.now() - t0;
  child.kill();
  await exited;
  return { ms };
}

/**
 * acpx@0.19.1 in `.cache/clients/acpx@0.19.1/` (where the client suite keeps pinned clients), installed
 * there with npm the first time; or the reason it cannot be had (npm needs the registry: where it
 * needs NODE_EXTRA_CA_CERTS, which bench/run.js clears, install it once by hand with the same command).
 */
function installAcpx() {
  const prefix = path.join(REPO_DIR, '.cache', 'clients', `${ACPX[0]}@${ACPX[1]}`);
  const bin = path.join(prefix, 'node_modules', '.bin', 'acpx');
  if (existsSync(bin)) return { bin };
  mkdirSync(prefix, { recursive: true });
  const npm = spawnSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', `${ACPX[0]}@${ACPX[1]}`], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (npm.status === 0 && existsSync(bin)) return { bin };
  return {
    skip: `npm install --prefix ${prefix} ${ACPX.join('@')}: ${(npm.stderr || npm.error?.message || `exit ${npm.status}`).trim().split('\n').at(-1)}`,
  };
}

/** `acpx exec` of the same prompt against the same agent: spawn → its exit after `end_turn`. */
async function viaAcpx(bin, cwd, home) {
  const t0 = performance.now();
  const child = spawn(
    bin,
    ['--agent', `${process.execPath} ${FIXTURE}`, '--cwd', cwd, '--approve-all', '--format', 'quiet', 'exec', 'hello'],
    {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: home, ACP_FIXTURE_STATE: cwd },
    },
  );
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.resume();
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0 || !out.includes('echo: hello')) throw new Error(`acpx exited ${code}: ${out.slice(0, 200)}`);
  return { ms: performance.now() - t0 };
}

async function overheadRows(dir, runs) {
  const cwd = path.join(dir, 'work');
  mkdirSync(cwd, { recursive: true });
  // The default broker keeps a spare adapter ready (the warm adapter); `cold` starts one per task, as before it.
  const broker = new TaskBroker({ concurrency: 2, ipcDir: path.join(dir, 'ipc'), logger: silentLogger });
  const cold = new TaskBroker({ concurrency: 2, ipcDir: path.join(dir, 'ipc-cold'), logger: silentLogger, acp: { warm: false } });
  await Promise.all([broker.ready, cold.ready]);
  const acpx = installAcpx();
  if (acpx.skip) log(`acp: acpx cannot be installed (${acpx.skip}); its row is skipped`);
  const variants = { direct: () => direct(cwd), backchannel: () => viaBroker(broker, cwd), cold: () => viaBroker(cold, cwd) };
  if (acpx.bin) variants.acpx = () => viaAcpx(acpx.bin, cwd, dir);
  log(`acp overhead: ${runs} prompts to end_turn each, ${Object.keys(variants).join(', ')} interleaved`);
  await interleave(2, variants); // warm: the SDK's modules in the page cache, the broker's first spawn
  const samples = await interleave(runs, variants);
  const cpu = await cpuRows(cwd, broker, cold, Math.max(5, Math.round(runs / 2)));
  await Promise.all([broker.close(), cold.close()]);
  const ms = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, summarize(list.map((s) => s.ms))]));
  const detail = `${runs} runs interleaved; the fixture ACP agent answers "echo: hello" at once; both clocks from before the agent's spawn, the SDK already loaded in this process (the adapter is a spare, started and loaded before the task); p90 ${ms.backchannel.p90?.toFixed(0) ?? '-'} vs ${ms.direct.p90?.toFixed(0) ?? '-'} ms`;
  const rows = [
    row({
      fig: 'ACP',
      name: 'An ACP prompt to end_turn through Backchannel (adapter task) vs the SDK client directly, median',
      unit: 'ms',
      value: ms.backchannel.p50,
      baseline: ms.direct.p50,
      target: { op: '<=', ratio: 1.1 },
      detail,
    }),
  ];
  rows.push(
    row({
      fig: 'ACP',
      name: '(before) the same prompt with the adapter started per task (`acp.warm: false`) vs the SDK client directly, median',
      unit: 'ms',
      value: ms.cold.p50,
      baseline: ms.direct.p50,
      detail: `warm vs per-task adapter in the same run: ${ms.backchannel.p50.toFixed(0)} vs ${ms.cold.p50.toFixed(0)} ms`,
    }),
    ...cpu,
    acpx.bin
      ? row({
          fig: 'ACP',
          name: '(peer) the same prompt by acpx 0.19.1 (`acpx exec`) vs the SDK client directly, median',
          unit: 'ms',
          value: ms.acpx.p50,
          baseline: ms.direct.p50,
          detail: `acpx vs Backchannel: ${ms.acpx.p50.toFixed(0)} vs ${ms.backchannel.p50.toFixed(0)} ms`,
        })
      : row({ fig: 'ACP', name: '(peer) acpx 0.19.1: not installed', unit: 'ms', value: NaN, baseline: NaN, detail: acpx.skip }),
  );
  return rows;
}

/** One prompt through `broker`: submit → result (then its processes gone, off the clock). */
async function viaBroker(broker, cwd) {
  const t0 = performance.now();
  const task = broker.submit({ command: FIXTURE, acp: true, input: 'hello', cwd, env: { ACP_FIXTURE_STATE: cwd }, retries: 0 });
  const result = await task.result;
  const ms = performance.now() - t0;
  await task.finished;
  if (result.data?.stop_reason !== 'end_turn') throw new Error(`backchannel: ${JSON.stringify(result.data).slice(0, 200)}`);
  return { ms };
}

/** CPU this process and its reaped children have used (/proc/self/stat: utime, stime, cutime, cstime), in ms. */
function cpuMs() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of the whole line are 12-15 here (after pid and comm), in clock ticks (100 per second).
  return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) * 10;
}

/**
 * CPU per prompt, each way in a block of its own (the spare's start runs beside the other ways when
 * they are interleaved): this process and its reaped children, so the adapter, the agent and — for
 * the warm broker — the spares it started (each prompt's replacement; the last one killed at the
 * broker's close, after it has loaded) are all counted.
 */
async function cpuRows(cwd, warm, cold, prompts) {
  if (process.platform !== 'linux') return [];
  const per = async (run) => {
    const before = cpuMs();
    for (let i = 0; i < prompts; i++) await run();
    return (cpuMs() - before) / prompts;
  };
  const direct_ = await per(() => direct(cwd));
  const cold_ = await per(() => viaBroker(cold, cwd));
  const warm_ = await per(() => viaBroker(warm, cwd));
  const detail = `${prompts} prompts each way in a block, this process and its reaped children (/proc/self/stat)`;
  return [
    row({
      fig: 'ACP',
      name: 'CPU per prompt, warm adapter (the spares’ starts included) vs the SDK client directly',
      unit: 'ms',
      value: warm_,
      baseline: direct_,
      detail,
    }),
    row({
      fig: 'ACP',
      name: 'CPU per prompt, adapter started per task vs the SDK client directly',
      unit: 'ms',
      value: cold_,
      baseline: direct_,
      detail,
    }),
  ];
}

/** A process spawned → its exit, stdout read to the end; rejects unless it exits 0 having printed `expect`. */
function timedProcess(args, env, expect) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, cwd: env.ACP_FIXTURE_STATE, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - t0;
      if (code === 0 && out.includes(expect)) resolve({ ms });
      else reject(new Error(`${path.basename(args[0])} exited ${code}: ${(out + err).slice(-300)}`));
    });
  });
}

/**
 * Like with like: a whole program that runs one ACP prompt. `backchannel run --local --acp` (no hub:
 * the CLI's own broker) vs a script of the SDK's client (bench/agents/acp-client.mjs), spawn → exit.
 */
async function programRows(dir, runs) {
  const cwd = path.join(dir, 'programs');
  mkdirSync(cwd, { recursive: true });
  const env = {
    ...process.env,
    ACP_FIXTURE_STATE: cwd,
    XDG_STATE_HOME: path.join(dir, 'programs-state'),
    BACKCHANNEL_CONTROL: path.join(dir, 'no-hub.sock'),
  };
  const cli = ['run', '--local', '--json', '--acp', '--input', '"hello"', '--', 'node', FIXTURE];
  const variants = {
    client: () => timedProcess([CLIENT, FIXTURE, 'hello'], env, 'echo: hello'),
    cli: () => timedProcess([CLI, ...cli], env, '"stop_reason":"end_turn"'),
  };
  log(`acp programs: ${runs} × \`backchannel run --local --acp\` and \`node acp-client.mjs\`, interleaved`);
  await interleave(1, variants);
  const samples = await interleave(runs, variants);
  const ms = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, summarize(list.map((s) => s.ms))]));
  return [
    row({
      fig: 'ACP',
      name: 'The same prompt as a program: `backchannel run --local --acp` vs a script of the SDK client (`node acp-client.mjs`), spawn → exit, median',
      unit: 'ms',
      value: ms.cli.p50,
      baseline: ms.client.p50,
      detail: `${runs} runs interleaved; each side starts Node and loads what it needs (the CLI: its broker, then the adapter's process; the script: the SDK); p90 ${ms.cli.p90?.toFixed(0) ?? '-'} vs ${ms.client.p90?.toFixed(0) ?? '-'} ms`,
    }),
  ];
}

/** A hub of its own whose run policy lets any command run (the fixture and the SDK agent). */
async function hub(dir) {
  const config = path.join(dir, 'config.yaml');
  writeFileSync(config, 'run_policy:\n  allow:\n    - command: "*"\n', { mode: 0o600 });
  const env = {
    ...process.env,
    BACKCHANNEL_CONFIG: config,
    XDG_STATE_HOME: path.join(dir, 'state'),
    BACKCHANNEL_CONTROL: path.join(dir, 'control.sock'),
    CURSOR_IPC_DIR: path.join(dir, 'hub-ipc'),
  };
  const serve = await startServe(path.join(dir, 'data'), env);
  return { serve, env };
}

/**
 * Runs `spec` on the hub and answers each of its `rounds` questions with `backchannel answer <id> <answer>`;
 * the samples: each question's arrival at this client → the next question's.
 */
async function answeredRounds(tasks, env, spec, rounds, answer) {
  const task = await tasks.run(spec);
  const samples = [];
  let last;
  const answered = new Promise((resolve, reject) => {
    task.on('update', (update) => {
      if (update.kind !== 'ask') return;
      const now = performance.now();
      if (last !== undefined) samples.push(now - last);
      last = now;
      const child = spawn(process.execPath, [CLI, 'answer', task.id, answer], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.once('close', (code) => code !== 0 && reject(new Error(`backchannel answer exited ${code}: ${stderr.trim().slice(-300)}`)));
    });
    task.result.then(resolve, reject);
  });
  await answered;
  await task.finished;
  if (samples.length < rounds - 1) throw new Error(`only ${samples.length} round trips of ${rounds}`);
  return samples;
}

async function approvalRows(dir, rounds) {
  const hubDir = path.join(dir, 'hub');
  mkdirSync(hubDir, { recursive: true });
  const { serve, env } = await hub(hubDir);
  process.env.BACKCHANNEL_CONTROL = env.BACKCHANNEL_CONTROL;
  const tasks = await openClient({ withoutHub: 'refuse' });
  const cwd = path.join(dir, 'work');
  try {
    const steps = Array.from({ length: rounds }, (_, i) => ({ permission: { id: `p${i}`, title: `Run step ${i}`, kind: 'execute' } }));
    const acpSpec = {
      command: FIXTURE,
      acp: true,
      cwd,
      env: { ACP_FIXTURE_STATE: cwd },
      input: `go SCRIPT:${JSON.stringify(steps)}`,
      origin: 'cli',
      retries: 0,
    };
    const askSpec = { command: agentPath('sdk-ask.mjs'), input: { payload: 'go on?', rounds }, origin: 'cli', retries: 0 };
    log(`acp approvals: ${rounds} permission requests answered with \`backchannel answer\`, then ${rounds} plain questions`);
    const approval = summarize(await answeredRounds(tasks, env, acpSpec, rounds, '1'));
    const question = summarize(await answeredRounds(tasks, env, askSpec, rounds, 'yes'));
    const detail = (what) =>
      `${what}; each answer is a \`backchannel answer\` process (≈ a Node start); p50 ${approval.p50.toFixed(0)} vs ${question.p50.toFixed(0)} ms, p99 ${approval.p99.toFixed(0)} vs ${question.p99.toFixed(0)} ms, ${approval.n} vs ${question.n} round trips`;
    return [
      row({
        fig: 'ACP',
        name: 'Approval round trip on a hub (permission request → agent resumes → next request) vs a plain question, p50',
        unit: 'ms',
        value: approval.p50,
        baseline: question.p50,
        detail: detail('the fixture ACP agent under the adapter vs bench/agents/sdk-ask.mjs'),
      }),
      row({
        fig: 'ACP',
        name: 'Approval round trip on a hub vs a plain question, p99',
        unit: 'ms',
        value: approval.p99,
        baseline: question.p99,
        detail: detail('same runs'),
      }),
    ];
  } finally {
    await tasks.close();
    await serve.stop();
  }
}
