/** `backchannel serve` for the benchmarks that time it or the panel (big-history, diff-render), and the headless Chromium they use. */
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { REPO_DIR } from './env.js';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** `backchannel serve` over `dataDir`, in its own process (its RSS is the hub's alone). */
export async function startServe(dataDir, ipcDir) {
  const child = spawn(process.execPath, [path.join(REPO_DIR, 'bin', 'backchannel.js'), 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { ...process.env, CURSOR_IPC_DIR: ipcDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /Backchannel panel: (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  const parsed = new URL(url);
  const token = parsed.searchParams.get('token');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    url,
    pid: child.pid,
    api(method, route, body) {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = http.request(
          parsed.origin + route,
          {
            method,
            agent: false,
            headers: { 'x-backchannel-token': token, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
          },
          (res) => {
            const chunks = [];
            res.on('data', (chunk) => chunks.push(chunk));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              if (res.statusCode >= 400) reject(new Error(`${method} ${route} → ${res.statusCode} ${text.slice(0, 200)}`));
              else resolve(text);
            });
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    async stop() {
      child.kill('SIGINT');
      await exited;
    },
  };
}
