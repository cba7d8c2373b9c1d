/**
 * `terminal/*` as Backchannel serves them, advertised only when the settings say the run policy lets
 * this door run commands: each command runs in the task's directory (no shell), its output kept to a
 * bound (the end is kept, as ACP asks), the `execute` approval applies unless the tool call that runs
 * it was approved. Every terminal is killed when released and when the adapter ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  RequestError,
  type CreateTerminalRequest,
  type TerminalOutputResponse,
  type WaitForTerminalExitResponse,
} from '@agentclientprotocol/sdk';
import type { Approvals } from './approvals.js';

/** The most output a terminal keeps (an agent may ask for less). */
const MAX_OUTPUT_BYTES = 1024 * 1024;
const MAX_TERMINALS = 16;

interface Terminal {
  child: ChildProcess;
  output: Buffer;
  limit: number;
  truncated: boolean;
  exit: Promise<WaitForTerminalExitResponse>;
  exitStatus: WaitForTerminalExitResponse | undefined;
}

export class TerminalService {
  private readonly terminals = new Map<string, Terminal>();
  private counter = 0;

  constructor(
    private readonly cwd: string,
    private readonly approvals: Approvals,
  ) {}

  async create(params: CreateTerminalRequest, signal: AbortSignal): Promise<{ terminalId: string }> {
    if (this.terminals.size >= MAX_TERMINALS) throw RequestError.invalidParams(undefined, `refused: more than ${MAX_TERMINALS} terminals`);
    const line = [params.command, ...(params.args ?? [])].join(' ');
    if (!(await this.approvals.mayRun(line, signal))) throw RequestError.invalidParams(undefined, `refused: run ${line}: not approved`);
    const env = { ...process.env, ...Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value])) };
    // The task's directory, whatever the agent asked: commands run where the task runs.
    const child = spawn(params.command, params.args ?? [], { cwd: this.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const limit = Math.min(MAX_OUTPUT_BYTES, params.outputByteLimit ?? MAX_OUTPUT_BYTES);
    const terminal: Terminal = { child, output: Buffer.alloc(0), limit, truncated: false, exit: undefined as never, exitStatus: undefined };
    const keep = (chunk: Buffer) => {
      const all = Buffer.concat([terminal.output, chunk]);
      terminal.truncated ||= all.length > limit;
      terminal.output = all.length > limit ? all.subarray(all.length - limit) : all;
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    terminal.exit = new Promise((resolve) => {
      child.once('exit', (code, sig) => resolve((terminal.exitStatus = { exitCode: code, signal: sig })));
      child.once('error', (error) => {
        keep(Buffer.from(`${error.message}\n`));
        resolve((terminal.exitStatus = { exitCode: 127, signal: null }));
      });
    });
    const terminalId = `term-${++this.counter}`;
    this.terminals.set(terminalId, terminal);
    return { terminalId };
  }

  output(terminalId: string): TerminalOutputResponse {
    const t = this.get(terminalId);
    return { output: t.output.toString('utf8'), truncated: t.truncated, ...(t.exitStatus ? { exitStatus: t.exitStatus } : {}) };
  }

  waitForExit(terminalId: string): Promise<WaitForTerminalExitResponse> {
    return this.get(terminalId).exit;
  }

  kill(terminalId: string): Record<string, never> {
    this.get(terminalId).child.kill('SIGKILL');
    return {};
  }

  release(terminalId: string): Record<string, never> {
    this.kill(terminalId);
    this.terminals.delete(terminalId);
    return {};
  }

  /** Kills every terminal still running (the adapter is ending). */
  closeAll(): void {
    for (const t of this.terminals.values()) if (!t.exitStatus) t.child.kill('SIGKILL');
    this.terminals.clear();
  }

  private get(terminalId: string): Terminal {
    const t = this.terminals.get(terminalId);
    if (!t) throw RequestError.invalidParams(undefined, `no terminal ${terminalId}`);
    return t;
  }
}
