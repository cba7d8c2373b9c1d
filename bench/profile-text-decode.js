/**
 * What bounds figure 2's attachment row: making a 10 MB string of received ASCII bytes, in one
 * process and without sockets. Each way of doing it gets 10 MiB in 64 KiB chunks (as a socket
 * delivers them, each chunk fresh memory), `--rounds` times, interleaved (each round in another order); the median time and the
 * median of the minor page faults it took (the first touch of a fresh page: the kernel zeroes it).
 * The fastest way is what src/protocol/attachments.ts (TextWhileReceiving) does and what
 * bench/big-result.js's `(limit)` row's plain receiver does.
 *
 *   node bench/profile-text-decode.js [--rounds=15]
 *
 * bench/profiles/text-decode.txt keeps a run's output.
 */
import { isAscii } from 'node:buffer';
import os from 'node:os';
import { median } from './lib/stats.js';

const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 15);
const BYTES = 10 * 1024 * 1024;
const CHUNK = 64 * 1024;

function freshChunks() {
  const chunks = [];
  for (let i = 0; i < BYTES / CHUNK; i++) chunks.push(Buffer.alloc(CHUNK, 0x61 + (i % 26)));
  return chunks;
}

/** Latin-1 `step` bytes at a time; `reuse`: copied through one scratch buffer, else Buffer.concat per step. */
function inSteps(step, reuse) {
  return (chunks) => {
    let text = '';
    let pending = [];
    let pendingBytes = 0;
    const scratch = reuse ? Buffer.allocUnsafe(step + CHUNK) : undefined;
    const decode = () => {
      let stretch;
      if (scratch) {
        let at = 0;
        for (const piece of pending) at += piece.copy(scratch, at);
        stretch = scratch.subarray(0, at);
      } else stretch = Buffer.concat(pending, pendingBytes);
      if (!isAscii(stretch)) throw new Error('not ASCII');
      text += stretch.toString('latin1');
      pending = [];
      pendingBytes = 0;
    };
    for (const chunk of chunks) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= step) decode();
    }
    if (pendingBytes > 0) decode();
    return text;
  };
}

const MiB = 1024 * 1024;
const ways = {
  'Latin-1, 1 MiB steps, one reused buffer': inSteps(MiB, true),
  'Latin-1, 1 MiB steps, Buffer.concat per step': inSteps(MiB, false),
  'Latin-1, 512 KiB steps, one reused buffer': inSteps(MiB / 2, true),
  'Latin-1, 4 MiB steps, one reused buffer': inSteps(4 * MiB, true),
  'Latin-1 per 64 KiB chunk': (chunks) => chunks.reduce((text, chunk) => text + chunk.toString('latin1'), ''),
  'Buffer.concat at the end, Latin-1': (chunks) => Buffer.concat(chunks).toString('latin1'),
  'Buffer.concat at the end, UTF-8': (chunks) => Buffer.concat(chunks).toString('utf8'),
  'TextDecoder, streaming': (chunks) => {
    const decoder = new TextDecoder();
    return chunks.reduce((text, chunk) => text + decoder.decode(chunk, { stream: true }), '') + decoder.decode();
  },
};

const samples = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
let keep;
const entries = Object.entries(ways);
for (let round = 0; round < rounds; round++) {
  // Each round starts at another way: which memory a way gets depends on what ran before it.
  for (const [name, way] of [...entries.slice(round % entries.length), ...entries.slice(0, round % entries.length)]) {
    const chunks = freshChunks();
    const faults0 = process.resourceUsage().minorPageFault;
    const t0 = performance.now();
    keep = way(chunks);
    const ms = performance.now() - t0;
    const faults = process.resourceUsage().minorPageFault - faults0;
    if (keep.length !== BYTES) throw new Error(`${name}: ${keep.length} characters`);
    samples[name].push({ ms, faults });
  }
}

console.log(
  `10 MiB of ASCII in 64 KiB chunks → one string; ${rounds} rounds, interleaved, each in another order · Node ${process.version} · ${os.cpus()[0]?.model} · load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(`${'way'.padEnd(48)} ${'ms p50'.padStart(7)} ${'min'.padStart(6)} ${'faults p50'.padStart(11)}`);
for (const [name, list] of Object.entries(samples)) {
  const ms = list.map((s) => s.ms);
  console.log(
    `${name.padEnd(48)} ${median(ms).toFixed(2).padStart(7)} ${Math.min(...ms)
      .toFixed(2)
      .padStart(6)} ${String(median(list.map((s) => s.faults))).padStart(11)}`,
  );
}
// The same work, split by whether the string's memory was fresh: what the page faults cost.
const all = Object.values(samples).flat();
const reused = all.filter((s) => s.faults < 100).map((s) => s.ms);
const fresh = all.filter((s) => s.faults > 1000).map((s) => s.ms);
if (reused.length && fresh.length)
  console.log(
    `every way together: ${median(reused).toFixed(2)} ms p50 in the ${reused.length} runs whose string landed in reused memory (< 100 faults), ${median(fresh).toFixed(2)} ms in the ${fresh.length} that took over 1,000 faults`,
  );
