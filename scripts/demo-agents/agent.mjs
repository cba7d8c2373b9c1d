#!/usr/bin/env node
// A tiny sub-agent that speaks the raw Backchannel protocol (docs/protocol.md) without the SDK.
// Used by `npm start`'s demo tasks, the panel's templates and the browser tests.
//
//   node agent.mjs --mode=progress --steps=20 --interval=200
//
// Modes: progress (partials with a percentage, then success), indeterminate (partials without one),
// fail (error payload + stderr), crash (exits 3 without a result), ask (asks a question, then
// succeeds with the answer), forever (progress until cancelled), markup (a result full of HTML).
import net from 'node:net';

const arg = (name, fallback) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? found.slice(name.length + 3) : fallback;
};
const taskId = arg('task-id', process.env.CURSOR_TASK_ID);
if (!taskId) {
  console.error('agent.mjs: no task id (--task-id= or CURSOR_TASK_ID); start me through Backchannel');
  process.exit(2);
}
const mode = arg('mode', 'progress');
const steps = Number(arg('steps', '10'));
const interval = Number(arg('interval', '300'));
const started = Date.now();

const socket = net.connect(process.env.CURSOR_IPC_PATH);
socket.setEncoding('utf8');
const send = (message) => socket.write(JSON.stringify({ task_id: taskId, ...message }) + '\n');
const meta = (extra = {}) => ({ timestamp: new Date().toISOString(), duration_ms: Date.now() - started, ...extra });

let buffered = '';
const waiting = new Map();
let cancelled = false;
socket.on('data', (chunk) => {
  buffered += chunk;
  let nl;
  while ((nl = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      continue;
    }
    if (message.type === 'cancel') {
      cancelled = true;
      finish({ status: 'cancelled', data: { message: `stopped: ${message.reason}` } });
    }
    waiting.get(message.type)?.(message);
  }
});
socket.on('error', (error) => {
  console.error(`agent.mjs: socket error: ${error.message}`);
  process.exitCode = 1;
});
// The broker went away (crashed or was killed): nobody is listening any more, so stop.
socket.on('close', () => {
  if (!finishing) process.exit(1);
});
const next = (type) => new Promise((resolve) => waiting.set(type, resolve));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let finishing = false;
function finish(payload) {
  if (finishing) return;
  finishing = true;
  next('ack').then(() => socket.end());
  send(payload);
  // The broker closes the connection after the ack in any case.
  socket.on('close', () => process.exit(0));
}

send({ type: 'hello', token: process.env.CURSOR_IPC_TOKEN, agent: 'demo-agent/1.0' });
const input = await next('input');
console.log(`demo agent started in mode ${mode} with input ${JSON.stringify(input.data)}`);

const model = { model_used: 'demo-model-1', token_usage: { input: 120 * steps, output: 40 * steps } };

if (mode === 'crash') {
  await sleep(interval);
  // What a real agent's crash looks like from outside: words on stderr, then a non-zero exit and no result.
  console.error('demo agent: OPENAI_API_KEY is not set; crashing on purpose (mode crash), without a result');
  process.exit(3);
}

if (mode === 'ask') {
  send({ status: 'partial', data: { step: 'waiting for your answer' } });
  send({ type: 'ask', ask_id: 'q1', question: 'Which branch should I review?', choices: ['main', 'dev'] });
  const heartbeat = setInterval(() => send({ status: 'heartbeat' }), 1000);
  const answer = await next('answer');
  clearInterval(heartbeat);
  finish({ status: 'success', data: { branch: answer.answer ?? null, error: answer.error ?? null }, meta: meta(model) });
} else {
  const total = mode === 'forever' ? Infinity : steps;
  for (let i = 1; i <= total && !cancelled; i++) {
    await sleep(interval);
    if (cancelled) break;
    const data =
      mode === 'indeterminate'
        ? { step: `scanning file ${i}` }
        : { progress: Math.round((i / steps) * 100) % 101, step: `step ${i} of ${steps}` };
    if (mode === 'forever') Object.assign(data, { progress: (i * 7) % 100, step: `round ${i}` });
    send({ status: 'partial', data });
    if (i % 5 === 0) console.log(`finished step ${i}`);
  }
  if (cancelled) {
    // finish() already sent `cancelled`.
  } else if (mode === 'fail') {
    console.error('error: rate limited by the model provider (HTTP 429)');
    console.error('giving up after 3 attempts');
    finish({
      status: 'error',
      data: { message: 'The model provider rate-limited every request', code: 429 },
      meta: meta(model),
      retryable: false,
    });
  } else if (mode === 'markup') {
    finish({
      status: 'success',
      data: { html: '<script>alert("owned")</script><img src=x onerror=alert(1)>', path: '../../etc/passwd', note: 'shown as text' },
      meta: meta(model),
    });
  } else {
    finish({
      status: 'success',
      data: { summary: `did ${steps} steps`, files: steps * 3, findings: [{ file: 'src/app.ts', line: 42, note: 'unused import' }] },
      meta: meta(model),
    });
  }
}
