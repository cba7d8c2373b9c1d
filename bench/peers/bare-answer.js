/**
 * The limit of bench/hub-answer.js: a process that does nothing but answer the probe's two requests,
 * over HTTP on a Unix socket as the hub's control endpoint does, with the bodies the hub gave for
 * them (read from the files in argv, parsed once; each answer serializes its body again, as the hub
 * does). It leads a session of its own, as the hub does, so what its answers take under the same
 * load is what any process in the hub's place would wait for a core: the floor under the hub's row.
 * argv: <socket> <page.json> <info.json>. Prints `ready` once listening; exits on SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [socket, pageFile, infoFile] = process.argv.slice(2);
const bodies = { '/page': JSON.parse(readFileSync(pageFile, 'utf8')), '/info': JSON.parse(readFileSync(infoFile, 'utf8')) };

const server = createServer((req, res) => {
  const value = bodies[req.url];
  if (!value) {
    res.writeHead(404).end();
    return;
  }
  const body = Buffer.from(JSON.stringify(value));
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
  res.end(body);
});
server.listen(socket, () => process.stdout.write('ready\n'));

// BENCH_BARE_BURN=<share of a core>: an experiment, not the limit: the answerer also spends that share
// of a core on its loop, in 1 ms turns, as a hub busy with its tasks does (docs/performance.md,
// "Issue 48, round 6").
const burn = Number(process.env.BENCH_BARE_BURN ?? 0);
if (burn > 0) {
  setInterval(() => {
    for (const end = performance.now() + 1; performance.now() < end;);
  }, 1 / burn).unref();
}
process.on('SIGTERM', () => server.close(() => process.exit(0)));
