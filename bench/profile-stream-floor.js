/**
 * The cost floor of figure 3's receiving end, in one process and without sockets: the receiver CPU
 * per message of 200,000 of the stream's lines (64 KiB chunks, as a socket delivers them) through
 * each added step of the broker's receive path, from the raw baseline's splitter up. Each variant
 * runs `--rounds` times, interleaved; median and min per message.
 *
 *   node bench/profile-stream-floor.js [--rounds=9]
 *
 * bench/profiles/stream-floor.txt keeps a run's output.
 */
import { EventEmitter } from 'node:events';
import os from 'node:os';
import { LineDecoder, parseLine, progressOf } from '../dist/protocol/index.js';
import { readInbound } from '../dist/broker/transport/inbound.js';
import { BASELINE_TASK_ID, message } from './agents/stream-message.mjs';
import { lineSplitter } from './lib/lines.js';

const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 9);
const N = 200_000;
const bytes = Buffer.from(Array.from({ length: N }, (_, i) => JSON.stringify(message(BASELINE_TASK_ID, i)) + '\n').join(''));
const chunks = [];
for (let at = 0; at < bytes.length; at += 64 * 1024) chunks.push(bytes.subarray(at, at + 64 * 1024));
const texts = chunks.map((c) => c.toString('latin1')); // the lines are ASCII
const events = new EventEmitter();
let seen = 0;
events.on('update', () => (seen += 1));
const watchdog = setTimeout(() => {}, 1e9);
const decode = (line) => {
  const decoder = new LineDecoder({ line, overflow() {} });
  for (const chunk of chunks) decoder.push(chunk);
};
const update = (payload) =>
  events.emit('update', {
    taskId: 'x',
    kind: 'partial',
    state: 'running',
    attempt: 1,
    progress: progressOf(payload),
    payload,
    line: undefined,
  });

const variants = [
  ['raw baseline: string splitter + JSON.parse', () => texts.forEach(lineSplitter(() => (seen += 1)))],
  ["the broker's LineDecoder + JSON.parse", () => decode((text) => parseLine(text).ok && (seen += 1))],
  [
    '+ readInbound (token out, validation, task-id check)',
    () => decode((text) => readInbound(text, BASELINE_TASK_ID, 'socket').ok && (seen += 1)),
  ],
  ['+ one update event per partial', () => decode((text) => update(readInbound(text, BASELINE_TASK_ID, 'socket').message))],
  [
    '+ Timeout.refresh() twice per message (the watchdog before this change)',
    () =>
      decode((text) => {
        watchdog.refresh();
        watchdog.refresh();
        update(readInbound(text, BASELINE_TASK_ID, 'socket').message);
      }),
  ],
];
const samples = variants.map(() => []);
const loadBefore = os.loadavg();
for (let r = 0; r < rounds; r++) {
  variants.forEach(([, run], i) => {
    const c0 = process.cpuUsage();
    run();
    const c = process.cpuUsage(c0);
    samples[i].push((c.user + c.system) / N);
  });
}
clearTimeout(watchdog);
const load = (l) => l.map((x) => x.toFixed(1)).join(' ');
console.log(
  `stream receive floor: ${N} lines × ${rounds} rounds, node ${process.version}, load ${load(loadBefore)} → ${load(os.loadavg())}`,
);
console.log('  µs/msg p50    min  step');
variants.forEach(([label], i) => {
  const s = samples[i].sort((a, b) => a - b);
  console.log(`  ${s[s.length >> 1].toFixed(2).padStart(10)} ${s[0].toFixed(2).padStart(6)}  ${label}`);
});
