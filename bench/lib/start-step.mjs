// One step of an SDK agent's start, timed in a fresh process (bench/profile-sdk-start.js): first the
// warm-up every agent pays (this file is a file module, node:net loaded, one dynamic import), then
// the step, printing its CPU time in ms. argv[2]: `import <specifier>`, `stdio`, `abort` or `none`.
import 'node:net';

await import('node:os');
const step = process.argv[2];
const c0 = process.cpuUsage();
if (step.startsWith('import ')) await import(step.slice(7));
else if (step === 'stdio') void [process.stdout, process.stderr];
else if (step === 'abort') void new AbortController().signal;
const c = process.cpuUsage(c0);
process.stdout.write(String((c.user + c.system) / 1000));
