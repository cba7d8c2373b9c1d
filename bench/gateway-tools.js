/**
 * The gateway's own cost of a tool round trip in bridge mode (docs/gateway.md, "Bridge mode"), with
 * the agent of bench/agents/bridge-agent.mjs calling a client's tool again and again in one run:
 *   (a) from the agent's call (its wall-clock send time, in the call's arguments) to the client's
 *       first byte of that call's arguments on a streamed Chat Completions response;
 *   (b) from the client's result request (its send time, in the result) to the agent receiving it.
 * Beside each, the in-process baseline of the same run: the same agent under a broker in this
 * process, its caller answering through `TaskRun.answerToolCall` — (a) call → the `tool_call`
 * update, (b) `answerToolCall` → the agent. The gateway runs in this process too, on a private broker of its own.
 */
import http from 'node:http';
import path from 'node:path';
import { silentLogger, TaskBroker } from '../dist/broker/index.js';
import { clientOf } from '../dist/client/index.js';
import { resolveGatewayConfig, startGateway } from '../dist/gateway/index.js';
import { agentPath, log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { summarize } from './lib/stats.js';

const AGENT = agentPath('bridge-agent.mjs');
const TOOL = { name: 'bench', description: 'Echoes the time', input_schema: { type: 'object', properties: { sent: { type: 'number' } } } };
const now = () => performance.timeOrigin + performance.now();

main(async ({ quick }) => {
  const rounds = quick ? 20 : 100;
  const dir = scratchDir();
  const broker = new TaskBroker({ concurrency: 2, ipcDir: path.join(dir, 'ipc'), dataDir: path.join(dir, 'data'), logger: silentLogger });
  await broker.ready;
  const client = clientOf(broker);
  const env = { BENCH_ROUNDS: String(rounds) };
  try {
    // Warm-up: the first task, page cache.
    await baseline(client, env, 3);
    log(`gateway tools: ${rounds} round trips in-process, then through the gateway`);
    const base = await baseline(client, env, rounds);
    const config = resolveGatewayConfig(
      { port: 0, auth: 'none', models: { bench: { command: process.execPath, args: [AGENT], env, mode: 'bridge' } } },
      process.env,
      dir,
    );
    process.env.CURSOR_IPC_DIR = path.join(dir, 'ipc-gateway');
    const gateway = await startGateway({ config }); // its own private broker, which runs its configured models
    let viaGateway;
    try {
      viaGateway = await throughGateway(gateway.baseURL, rounds);
    } finally {
      await gateway.close();
    }
    const results = {
      baseline: { out: summarize(base.out), back: summarize(base.back) },
      gateway: { out: summarize(viaGateway.out), back: summarize(viaGateway.back) },
    };
    const rows = [];
    for (const [key, name] of [
      ['out', "agent's tool call → client's first byte of tool_calls"],
      ['back', "client's result request → agent receives the result"],
    ]) {
      const g = results.gateway[key];
      const b = results.baseline[key];
      for (const [p, target] of [
        ['p50', 5],
        ['p99', 20],
      ]) {
        rows.push(
          row({
            fig: 'G',
            name: `Gateway tool round trip: ${name} ${p}`,
            unit: 'ms',
            value: g[p],
            baseline: target,
            target: { op: '<=', ratio: 1 },
            detail: `baseline column = the ${target} ms target; in-process baseline of the same run (answerToolCall, no HTTP) ${p} ${b[p].toFixed(2)} ms; ${g.n} round trips in one bridged run, min ${g.min.toFixed(2)}, p90 ${g.p90.toFixed(2)}, max ${g.max.toFixed(2)} ms; wall clocks of the agent and the client (one machine)`,
          }),
        );
      }
    }
    return { figure: 'gateway-tools', results, rows };
  } finally {
    await broker.close();
  }
});

/** The same agent under the broker, answered in process: call → `tool_call` update, answer → agent. */
async function baseline(client, env, rounds) {
  const task = await client.run({
    command: process.execPath,
    args: [AGENT],
    env: { ...env, BENCH_ROUNDS: String(rounds) },
    tools: [TOOL],
    retries: 0,
  });
  const out = [];
  task.on('update', (update) => {
    if (update.kind !== 'tool_call' || !update.toolCall) return;
    out.push(now() - update.toolCall.arguments.sent);
    void task.answerToolCall(update.toolCall.callId, { content: JSON.stringify({ sent: now() }) });
  });
  const final = await task.result;
  return { out, back: JSON.parse(final.data.text) };
}

/** One bridged run through the gateway's Chat Completions API, each tool call answered by a new streamed request. */
async function throughGateway(baseURL, rounds) {
  const tools = [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.input_schema } }];
  const messages = [{ role: 'user', content: 'bench' }];
  const out = [];
  for (let i = 0; i <= rounds; i++) {
    const { text, arrived } = await streamed(`${baseURL}/chat/completions`, { model: 'bench', stream: true, tools, messages });
    const chunks = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    const calls = chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
    const start = calls.find((c) => c.id);
    if (!start) return { out, back: JSON.parse(chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')) };
    const args = calls
      .filter((c) => c.function?.arguments)
      .map((c) => c.function.arguments)
      .join('');
    out.push(arrived - JSON.parse(args).sent);
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: start.id, type: 'function', function: { name: TOOL.name, arguments: args } }],
    });
    messages.push({ role: 'tool', tool_call_id: start.id, content: JSON.stringify({ sent: now() }) });
  }
  throw new Error(`the run made more than ${rounds} tool calls`);
}

/** A streamed request; `arrived`: when the first bytes of a tool call's arguments came. */
function streamed(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      let arrived;
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
        if (arrived === undefined && /"arguments":"\{/.test(text)) arrived = now();
      });
      res.on('end', () =>
        res.statusCode === 200
          ? resolve({ text, arrived })
          : reject(new Error(`gateway answered ${res.statusCode}: ${text.slice(0, 300)}`)),
      );
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
