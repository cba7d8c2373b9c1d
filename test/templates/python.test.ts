/**
 * The python template (on the backchannel-subagent SDK, found in sdk/python/src) under the real broker: success with progress,
 * input, refusal of paths outside the working directory, ask/answer, cancel, and the stdout fallback.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTask, startBroker, type TestBroker } from '../helpers/broker.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const agent = path.join(root, 'templates/python/agent.py');

let tb: TestBroker;
let work: string;
beforeAll(async () => {
  tb = await startBroker({ askTimeoutMs: 2000 });
  work = fs.mkdtempSync(path.join(tb.dir, 'py-'));
  fs.mkdirSync(path.join(work, 'docs'));
  fs.writeFileSync(path.join(work, 'docs/a.md'), '# Title\n\nsome words here\n');
  fs.writeFileSync(path.join(work, 'docs/b.md'), 'one two\nthree');
  fs.writeFileSync(path.join(work, 'docs/c.py'), 'print("你好")\n');
  fs.writeFileSync(path.join(work, 'docs/blob.bin'), Buffer.from([0xff, 0xfe, 0x00, 0x81]));
});
afterAll(async () => {
  await tb.close();
});

const spec = (input: unknown, extra: object = {}) => ({
  command: 'python3',
  args: [agent],
  cwd: work,
  input,
  heartbeatTimeoutMs: 10_000,
  ...extra,
});

describe('the python template under the broker', () => {
  it('counts the files named by its input and reports progress on the way', async () => {
    const run = await runTask(tb.broker, spec({ path: 'docs', extensions: ['.md', '.py'] }));
    expect(run.error).toBeUndefined();
    expect(run.payload?.data).toMatchObject({ files: 3, lines: 3 + 2 + 1, words: 5 + 3 + 1, skipped: 0 });
    expect(run.payload?.meta).toMatchObject({ files_scanned: 3, duration_ms: expect.any(Number), channel: 'socket' });
    const progress = run.partials.map((p) => (p.data as { progress?: number }).progress);
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(100);
    expect(run.snapshot.progress).toBe(100);
  });

  it('skips binary files and counts everything without an extension filter', async () => {
    const run = await runTask(tb.broker, spec({ path: 'docs' }));
    expect(run.payload?.data).toMatchObject({ files: 3, skipped: 1 });
  });

  it('refuses a path outside its working directory, as a final error', async () => {
    const run = await runTask(tb.broker, spec({ path: '../..' }, { retries: 2 }));
    expect(run.error?.reason).toBe('error');
    expect(run.error?.payload?.retryable).toBe(false);
    expect((run.error?.payload?.data as { message: string }).message).toMatch(/outside the working directory/);
    expect(run.snapshot.attempt).toBe(1);
  });

  it('asks which files to count and uses the answer', async () => {
    const run = await runTask(tb.broker, spec({ path: 'docs', ask: true }), (update, handle) => {
      const question = handle.snapshot().pendingQuestion;
      if (update.kind === 'ask' && question) {
        expect(question.choices).toContain('Python');
        tb.broker.answer(handle.id, question.askId, 'Python');
      }
    });
    expect(run.payload?.data).toMatchObject({ files: 1, extensions: ['.py'] });
  });

  it('fails clearly when nobody answers its question in time', async () => {
    const run = await runTask(tb.broker, spec({ path: 'docs', ask: true }));
    expect(run.error?.reason).toBe('error');
    expect((run.error?.payload?.data as { message: string }).message).toMatch(/AskError: nobody answered/);
  });

  it('stops between files when cancelled', async () => {
    const run = await runTask(tb.broker, spec({ path: 'docs', pace_ms: 2000 }), (update, handle) => {
      if (update.kind === 'partial' && (update.payload?.data as { step?: string }).step === 'counting') handle.cancel('enough');
    });
    expect(run.snapshot.state).toBe('cancelled');
    expect(run.partials.filter((p) => (p.data as { step?: string }).step === 'counting')).toHaveLength(1);
  });

  it('keeps a task alive with heartbeats while it works silently', async () => {
    // 7 s of silence after the last partial against a 5 s watchdog (roomy, because the watchdog also
    // covers Python's start-up, which takes seconds on a loaded machine): only heartbeats save it.
    fs.mkdirSync(path.join(work, 'one'), { recursive: true });
    fs.writeFileSync(path.join(work, 'one/x.md'), 'x\n');
    const run = await runTask(tb.broker, spec({ path: 'one', pace_ms: 7000 }, { heartbeatTimeoutMs: 5000 }));
    expect(run.error, JSON.stringify({ e: run.error?.message, log: tb.broker.logOf(run.handle.id) })).toBeUndefined();
    expect(run.payload?.data).toMatchObject({ files: 1 });
  });

  it('reports through stdout data: lines when there is no socket', async () => {
    const run = await runTask(tb.broker, { ...spec({}), command: 'env', args: ['-u', 'CURSOR_IPC_PATH', 'python3', agent] });
    expect(run.error).toBeUndefined();
    expect(run.payload?.meta).toMatchObject({ channel: 'stdout' });
    expect(run.payload?.data).toMatchObject({ files: 4 }); // no input over stdout: counts the whole cwd
    expect(run.partials.length).toBeGreaterThan(0);
  });

  it('spools its result and prints it on stdout when the broker vanishes before the ack', async () => {
    // A broker that dies between receiving the result and acknowledging it cannot be produced on
    // demand with the real one, so this end of the socket is played by hand (protocol §3–§4, §8).
    const net = await import('node:net');
    const { spawn } = await import('node:child_process');
    const dir = fs.mkdtempSync(path.join(tb.dir, 'spool-'));
    const socketPath = path.join(dir, 's.sock');
    const token = 'b'.repeat(64);
    const received: Array<Record<string, unknown>> = [];
    const server = net.createServer((socket) => {
      let buffer = '';
      socket.on('data', (chunk) => {
        buffer += chunk.toString('utf8');
        for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
          const message = JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>;
          buffer = buffer.slice(nl + 1);
          received.push(message);
          if (message.type === 'hello' && message.token === token) {
            socket.write(JSON.stringify({ type: 'welcome', task_id: 't-spool', attempt: 1, protocol: 1, heartbeat_timeout_ms: 0 }) + '\n');
            socket.write(JSON.stringify({ type: 'input', task_id: 't-spool', data: { path: 'docs', extensions: ['.md'] } }) + '\n');
          }
          if (message.status === 'success') socket.destroy(); // gone without an ack
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const child = spawn('python3', [agent, '--task-id=t-spool'], {
        cwd: work,
        env: { PATH: process.env.PATH, CURSOR_IPC_PATH: socketPath, CURSOR_IPC_TOKEN: token, CURSOR_SPOOL_DIR: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      expect(received.map((m) => m.type ?? m.status)).toEqual(['hello', 'partial', 'partial', 'partial', 'success']);
      const spooled = JSON.parse(fs.readFileSync(path.join(dir, 't-spool.json'), 'utf8')) as { status: string; data: { files: number } };
      expect(spooled).toMatchObject({ status: 'success', data: { files: 2 } });
      expect((fs.statSync(path.join(dir, 't-spool.json')).mode & 0o777).toString(8)).toBe('600');
      expect(stdout).toMatch(/^data: \{"task_id":"t-spool","status":"success"/m);
    } finally {
      server.close();
    }
  });

  it('receives a 10 MB input intact, multibyte characters included', async () => {
    const blob = 'é'.repeat(5 * 1024 * 1024); // 10 MB of UTF-8
    const script = [
      'import sys',
      `sys.path.insert(0, ${JSON.stringify(path.join(root, 'sdk/python/src'))})`,
      'from backchannel_subagent import run_agent',
      'run_agent(lambda task: {"chars": len(task.input["blob"]), "ok": set(task.input["blob"]) == {"é"}})',
    ].join('\n');
    const run = await runTask(tb.broker, { command: 'python3', args: ['-c', script], cwd: work, input: { blob } });
    expect(run.payload?.data).toEqual({ chars: 5 * 1024 * 1024, ok: true });
  });

  it('exits with a usage error when started outside Backchannel', async () => {
    const { spawnSync } = await import('node:child_process');
    const out = spawnSync('python3', [agent], { cwd: work, env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/no task id/);
  });
});
