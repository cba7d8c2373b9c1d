/**
 * Framing alone, in one process (no sockets): the project's LineDecoder + parseLine against the
 * `ndjson` package it replaced (split2 + JSON.parse in a Transform stream) and a hand-written
 * string splitter. Inputs arrive in 64 KiB chunks, as from a socket: 200k small lines, and one
 * 10 MB line. CPU time per run; medians over repeated runs.
 */
import { createRequire } from 'node:module';
import { LineDecoder, parseLine } from '../dist/protocol/index.js';
import { lineSplitter } from './lib/lines.js';
import { log } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { cpuMicros, median } from './lib/stats.js';
import { message } from './agents/stream-message.mjs';

const require = createRequire(import.meta.url);
const ndjson = require('ndjson');
const CHUNK = 64 * 1024;

function chunked(buffer) {
  const chunks = [];
  for (let i = 0; i < buffer.length; i += CHUNK) chunks.push(buffer.subarray(i, i + CHUNK));
  return chunks;
}

const decoders = {
  ours(chunks, onValue) {
    const decoder = new LineDecoder({
      line(text) {
        const parsed = parseLine(text);
        if (parsed.ok) onValue(parsed.value);
      },
      overflow() {},
    });
    for (const chunk of chunks) decoder.push(chunk);
    decoder.end();
  },
  ndjson(chunks, onValue) {
    return new Promise((resolve, reject) => {
      const stream = ndjson.parse();
      stream.on('data', onValue);
      stream.on('end', resolve);
      stream.on('error', reject);
      for (const chunk of chunks) stream.write(chunk);
      stream.end();
    });
  },
  handwritten(chunks, onValue) {
    const push = lineSplitter(onValue);
    for (const chunk of chunks) push(chunk.toString('utf8'));
  },
};

async function measure(name, chunks, expected) {
  let seen = 0;
  const c0 = cpuMicros();
  const t0 = performance.now();
  await decoders[name](chunks, () => (seen += 1));
  const ms = performance.now() - t0;
  const cpu = cpuMicros() - c0;
  if (seen !== expected) throw new Error(`${name}: ${seen} values, expected ${expected}`);
  return { ms, cpu };
}

main(async ({ quick }) => {
  const runs = quick ? 3 : 7;
  const count = quick ? 50_000 : 200_000;
  const small = chunked(Buffer.from(Array.from({ length: count }, (_, i) => JSON.stringify(message('bench', i)) + '\n').join('')));
  const big = chunked(Buffer.from(JSON.stringify({ task_id: 'bench', status: 'success', data: 'b'.repeat(10 * 1024 * 1024) }) + '\n'));
  const results = { small: {}, big: {} };
  log(`framing: ${count} lines and one 10 MB line × ${runs} runs × 3 decoders`);
  for (const name of Object.keys(decoders)) {
    results.small[name] = [];
    results.big[name] = [];
  }
  for (let r = 0; r < runs; r++) {
    for (const name of Object.keys(decoders)) {
      results.small[name].push(await measure(name, small, count));
      // The string splitters re-scan the growing line on every chunk (quadratic): seconds per run,
      // so they get one run of the 10 MB line.
      if (r === 0 || name === 'ours') results.big[name].push(await measure(name, big, 1));
    }
  }
  const rate = (name) => count / (median(results.small[name].map((x) => x.cpu)) / 1e6);
  const us = (name) => median(results.small[name].map((x) => x.cpu)) / count;
  const bigMs = (name) => median(results.big[name].map((x) => x.cpu)) / 1000;
  return {
    figure: 'framing',
    runs,
    count,
    results,
    rows: [
      row({
        fig: 'F',
        name: `Framing + parse, ${count / 1000}k lines: ours vs ndjson`,
        unit: 'msg/s',
        value: rate('ours'),
        baseline: rate('ndjson'),
        detail: `CPU/line ${us('ours').toFixed(2)} vs ${us('ndjson').toFixed(2)} µs (ndjson); hand-written string splitter ${us('handwritten').toFixed(2)} µs`,
      }),
      row({
        fig: 'F',
        name: 'Framing + parse, one 10 MB line: ours vs ndjson',
        unit: 'ms',
        value: bigMs('ours'),
        baseline: bigMs('ndjson'),
        detail: `CPU time; ndjson (split2) and a naive string splitter re-scan the pending line on every 64 KiB chunk; naive splitter ${bigMs('handwritten').toFixed(0)} ms`,
      }),
    ],
  };
});
