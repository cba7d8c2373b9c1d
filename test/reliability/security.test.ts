/**
 * Fault table, "security": who can reach an endpoint, what a sender without the task's secret can
 * do (nothing), what a sub-agent can do to another task (nothing), that agent data is never used as
 * code or a path, and which of the broker's environment variables a sub-agent sees.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TaskHandle } from '../../src/broker/index.js';
import { fixture, makeBroker, settle, tempDir, waitFor } from '../helpers/core.js';
import { captureLogger, expectNothingLeft, hostile } from '../helpers/reliability.js';

/** Starts a task that waits silently (until cancelled) and resolves once it is connected. */
async function waitingTask(broker: ReturnType<typeof makeBroker>['broker']): Promise<TaskHandle> {
  const task = broker.submit({ command: fixture('stubborn.mjs'), args: ['silent'] });
  await new Promise<void>((resolve) => task.on('update', (u) => u.kind === 'partial' && resolve()));
  return task;
}

function endpointOf(ipcDir: string): string {
  const sockets = readdirSync(ipcDir).filter((n) => n.endsWith('.sock'));
  expect(sockets).toHaveLength(1);
  return path.join(ipcDir, sockets[0]!);
}

/** Sends one line to an endpoint and returns everything the broker answered before closing. */
function inject(endpoint: string, message: unknown): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection(endpoint);
    let text = '';
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    socket.on('close', () => resolve(text));
    socket.write(JSON.stringify(message) + '\n');
  });
}

const NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];
const CLIENT = `
  const socket = require('net').createConnection(process.argv[1]);
  socket.on('connect', () => { console.log('CONNECTED'); socket.write('{"task_id":"x","status":"success"}\\n'); });
  socket.on('data', (d) => process.stdout.write(String(d)));
  socket.on('close', () => process.exit(0));
  socket.on('error', (e) => console.log(e.code));`;
const setprivMissing = spawnSync('setpriv', ['--version']).error
  ? 'setpriv is not installed'
  : process.getuid?.() !== 0
    ? 'switching to nobody needs root'
    : undefined;

/** Runs the client as nobody (asynchronously: the broker answering it lives in this process). */
function connectAsNobody(endpoint: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('setpriv', [...NOBODY, process.execPath, '-e', CLIENT, endpoint], { cwd: '/' });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.on('close', () => resolve(out.trim()));
  });
}

describe('who can connect', () => {
  test.skipIf(setprivMissing)(
    `another user (nobody) cannot connect to an endpoint${setprivMissing ? ` (skipped: ${setprivMissing})` : ''}`,
    async () => {
      const { broker, ipcDir } = makeBroker();
      const task = await waitingTask(broker);
      const endpoint = endpointOf(ipcDir);
      expect(statSync(ipcDir).mode & 0o777).toBe(0o700);
      expect(statSync(endpoint).mode & 0o777).toBe(0o600);

      // The private directory stops them.
      expect(await connectAsNobody(endpoint)).toBe('EACCES');
      // With every directory on the way opened up, the socket file's own 0600 still stops them.
      const parents = [ipcDir, path.dirname(ipcDir)];
      for (const dir of parents) chmodSync(dir, 0o711);
      try {
        expect(await connectAsNobody(endpoint)).toBe('EACCES');
        // Control: the same client, allowed by the file mode, does connect (and then meets the token check).
        chmodSync(endpoint, 0o666);
        const reply = await connectAsNobody(endpoint);
        expect(reply).toContain('CONNECTED');
        expect(reply).toContain('"type":"reject"');
      } finally {
        chmodSync(endpoint, 0o600);
        for (const dir of parents) chmodSync(dir, 0o700);
      }
      await waitFor(() => task.snapshot().counters.rejected === 1, 'the control connection to be counted');
      expect(task.snapshot().state).toBe('running');
      task.cancel();
      await settle(task.result);
      await task.finished;
      await expectNothingLeft(ipcDir);
    },
  );
});

describe('the task secret', () => {
  // Without `requireToken`, a tokenless first line is accepted on a private POSIX socket (only our
  // own user can connect); round2-delivery.test.ts covers that. Strict mode refuses it like a wrong token.
  test('a sender without the token (strict mode), or with a wrong one, cannot inject a result; each try is refused, logged and counted', async () => {
    const logger = captureLogger();
    const { broker, ipcDir } = makeBroker({ logger, requireToken: true });
    const task = await waitingTask(broker);
    const endpoint = endpointOf(ipcDir);
    const forged = { task_id: task.id, status: 'success', data: 'forged' };
    const replies = [
      await inject(endpoint, forged),
      await inject(endpoint, { ...forged, token: 'f'.repeat(64) }),
      await inject(endpoint, { ...forged, token: '' }),
      await inject(endpoint, { type: 'hello', task_id: task.id, token: 'short' }),
      await inject(endpoint, { ...forged, token: 12345 }),
    ];
    for (const reply of replies) {
      expect(reply).toMatch(
        /^\{"type":"reject","task_id":"[^"]+","reason":"(wrong token|authentication required: the first message must carry the task token)"\}\n$/,
      );
      expect(reply).not.toContain('welcome');
    }
    const snap = task.snapshot();
    expect(snap.state).toBe('running');
    expect(snap.result).toBeUndefined();
    expect(snap.counters.rejected).toBe(5);
    expect(logger.at('warn').filter((w) => w.includes(task.id) && w.includes('rejected'))).toHaveLength(5);
    task.cancel();
    expect(await settle(task.result)).toMatchObject({ ok: false, error: { reason: 'cancelled' } });
    await task.finished;
    await expectNothingLeft(ipcDir);
  });

  test('a sub-agent cannot reach another task: its own token, no token (strict mode), or the victim’s id are all refused', async () => {
    const { broker, ipcDir } = makeBroker({ requireToken: true });
    const victim = await waitingTask(broker);
    const thief = broker.submit({ command: hostile('token-thief.mjs'), args: [victim.id] });
    const { tried, replies } = (await thief.result).data as { tried: number; replies: string[] };
    expect(tried).toBe(1);
    expect(replies).toHaveLength(4);
    for (const reply of replies) expect(reply).toMatch(/"type":"reject"/);
    expect(victim.snapshot()).toMatchObject({ state: 'running', counters: { rejected: 4 } });
    victim.cancel();
    await settle(victim.result);
    await Promise.all([victim.finished, thief.finished]);
    await expectNothingLeft(ipcDir);
  });
});

describe('agent data is data', () => {
  const NASTY = {
    html: '<script>alert("pwned")</script><img src=x onerror=alert(1)>',
    path: '../../../../etc/passwd',
    windowsPath: '..\\..\\..\\Windows\\System32',
    template: '${process.exit(1)} {{constructor.constructor("alert(1)")()}}',
    control: 'bell\u0007 esc\u001b[2J nul\u0000 rtl\u202e',
  };

  test('<script> and ../../ payloads are stored and returned verbatim, never evaluated or used as a path', async () => {
    const root = tempDir();
    const ipcDir = path.join(root, 'ipc');
    const dataDir = path.join(root, 'data');
    const { broker } = makeBroker({ ipcDir, dataDir });
    const task = broker.submit({ command: hostile('script-payload.mjs') });
    const partials: unknown[] = [];
    task.on('update', (u) => u.kind === 'partial' && partials.push(u.payload?.data));
    const result = await task.result;
    const expected = { ...NASTY, nested: [NASTY.html, { '../key': NASTY.path }] };
    const data = result.data as Record<string, unknown>;
    expect(data).toMatchObject(expected);
    // JSON's "__proto__" key stays an ordinary own property: nothing is polluted.
    expect(Object.getOwnPropertyNames(data)).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(result.meta?.model_used).toBe(NASTY.html);
    expect(partials).toEqual([{ progress: 50, ...NASTY }]);
    await task.finished;
    await broker.close();

    // Stored verbatim, and read back verbatim by the next broker.
    const { broker: again } = makeBroker({ ipcDir, dataDir });
    await again.ready;
    const stored = again.get(task.id)!;
    expect(stored.result?.data).toMatchObject(expected);
    expect(stored.lastPartial).toEqual({ progress: 50, ...NASTY });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // No file was created from any of it: only the journal, anywhere under the test's root.
    expect(readdirSync(root).sort()).toEqual(['data', 'ipc']);
    // The running broker's lock and the (empty) results directory are the broker's own; nothing else.
    // The journal and the room it keeps for a full disk (journal.reserve); nothing named after a payload.
    expect(readdirSync(dataDir).filter((name) => name !== 'broker.lock' && name !== 'results')).toEqual([
      'journal.ndjson',
      'journal.reserve',
    ]);
    if (readdirSync(dataDir).includes('results')) expect(readdirSync(path.join(dataDir, 'results'))).toEqual([]);
    expect(readFileSync(path.join(dataDir, 'journal.ndjson'), 'utf8')).toContain(JSON.stringify(NASTY.html));
    await expectNothingLeft(ipcDir);
  });

  test('spool files naming another task, a path, or garbage are removed at start and never adopted', async () => {
    const root = tempDir();
    const ipcDir = path.join(root, 'ipc');
    const dataDir = path.join(root, 'data');
    const { broker: first } = makeBroker({ ipcDir, dataDir });
    const done = first.submit({ command: fixture('quick.mjs'), input: { n: 1 } });
    await done.result;
    await first.close();
    const spools = {
      'evil.json': { task_id: '../../../../tmp/owned', status: 'success', data: 'x' },
      [`${done.id}.json`]: { task_id: done.id, status: 'error', data: { message: 'rewrite history' } },
      'garbage.json': 'not json at all',
    };
    for (const [name, body] of Object.entries(spools))
      writeFileSync(path.join(ipcDir, name), typeof body === 'string' ? body : JSON.stringify(body));
    const logger = captureLogger();
    const { broker } = makeBroker({ ipcDir, dataDir, logger });
    await broker.ready;
    // A finished task's result is never replaced from a spool file.
    expect(broker.get(done.id)).toMatchObject({ state: 'succeeded', result: { data: { n: 1 } } });
    expect(broker.tasks()).toHaveLength(1);
    expect(readdirSync(ipcDir)).toEqual([]);
    expect(readdirSync(root).sort()).toEqual(['data', 'ipc']);
    expect(logger.at('warn').filter((w) => w.startsWith('spool file'))).toHaveLength(3);
  });
});

describe("the sub-agent's environment", () => {
  const SCRIPT = `process.stdout.write('data: ' + JSON.stringify({ task_id: process.env.CURSOR_TASK_ID, status: 'success', data: process.env }) + '\\n\\n');`;
  const PLANTED = {
    BACKCHANNEL_PANEL_TOKEN: 'panel-secret',
    ELECTRON_RUN_AS_NODE: '1',
    CURSOR_IPC_TOKEN: 'outer-task-secret',
    CURSOR_TASK_ID: 'outer-task',
    APP_SECRET_KEY: 'hush',
    OPENAI_API_KEY: 'sk-test',
  };

  async function envOf(options: Parameters<typeof makeBroker>[0]): Promise<Record<string, string>> {
    const saved = Object.fromEntries(Object.keys(PLANTED).map((k) => [k, process.env[k]]));
    Object.assign(process.env, PLANTED);
    try {
      const { broker, ipcDir } = makeBroker(options);
      const task = broker.submit({ command: 'node', args: ['-e', SCRIPT], taskIdArg: false });
      const env = (await task.result).data as Record<string, string>;
      expect(env.CURSOR_TASK_ID).toBe(task.id);
      await task.finished;
      await expectNothingLeft(ipcDir);
      return env;
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }

  test('by default the panel token, ELECTRON_RUN_AS_NODE and an outer task’s hand-off never reach a sub-agent', async () => {
    const env = await envOf({});
    expect(env.BACKCHANNEL_PANEL_TOKEN).toBeUndefined();
    expect(env.ELECTRON_RUN_AS_NODE).toBeUndefined();
    expect(env.CURSOR_IPC_TOKEN).toMatch(/^[0-9a-f]{64}$/);
    expect(env.OPENAI_API_KEY).toBe('sk-test');
  });

  test('a deny list hides matching variables; an allow list passes only what it names (plus the hand-off)', async () => {
    const denied = await envOf({ env: { deny: ['*SECRET*', 'OPENAI_*'] } });
    expect(denied.APP_SECRET_KEY).toBeUndefined();
    expect(denied.OPENAI_API_KEY).toBeUndefined();
    expect(denied.PATH).toBe(process.env.PATH);
    const allowed = await envOf({ env: { allow: ['PATH', 'HOME'] } });
    const names = Object.keys(allowed).filter((n) => !n.startsWith('CURSOR_'));
    expect(names.filter((n) => !['PATH', 'HOME', 'LANG', 'LC_ALL', 'PYTHONUNBUFFERED', 'PYTHONIOENCODING'].includes(n))).toEqual([]);
  });
});
