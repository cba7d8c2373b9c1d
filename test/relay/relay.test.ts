/**
 * The stdio MCP relay (src/relay): the official MCP client starts the relay process over stdio, as
 * a coding CLI does, and the relay reaches the test's tool answerer through the agent-side relay
 * socket (openToolRelay). What the client lists, calls and gets back is what the task was offered and
 * what the caller answered, whole.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { openToolRelay, type ToolHost, type ToolRelay } from '../../src/relay/index.js';
import { WRITE_TOOL } from '../helpers/client-tools.js';
import { isAlive, waitFor } from '../helpers/core.js';

const TOOLS = [
  WRITE_TOOL,
  { name: 'Big', input_schema: { type: 'object', properties: {} } },
  { name: 'Fails', description: 'Always refused', input_schema: { type: 'object' } },
  { name: 'Slow', input_schema: { type: 'object' } },
];
const TEN_MB = 10 * 1024 * 1024;

/** The test's tool answerer: records each call, answers per tool. */
function answerer(): ToolHost & { calls: Array<{ name: string; args: unknown }>; aborted: string[] } {
  const calls: Array<{ name: string; args: unknown }> = [];
  const aborted: string[] = [];
  return {
    tools: TOOLS,
    calls,
    aborted,
    callTool(name, args, options) {
      calls.push({ name, args });
      if (name === 'Write') return Promise.resolve(`wrote ${String(args.content).length} bytes to ${String(args.file_path)}`);
      if (name === 'Big') return Promise.resolve('x'.repeat(TEN_MB - 1) + 'y');
      if (name === 'Fails') return Promise.reject(new Error('the user refused this edit'));
      return new Promise((_, reject) => {
        options?.signal?.addEventListener('abort', () => {
          aborted.push(name);
          reject(new Error('aborted'));
        });
      });
    },
  };
}

const open: Array<{ client: Client; relay: ToolRelay }> = [];
afterEach(async () => {
  for (const { client, relay } of open.splice(0)) {
    await client.close();
    await relay.close();
  }
});

async function connect(host: ToolHost) {
  const relay = await openToolRelay(host);
  const transport = new StdioClientTransport({
    command: relay.command,
    args: [...relay.args],
    stderr: 'pipe',
    maxBufferSize: 64 * 1024 * 1024,
  });
  const client = new Client({ name: 'relay-test', version: '1.0.0' });
  await client.connect(transport);
  open.push({ client, relay });
  return { client, relay, transport };
}

describe('the stdio MCP relay', () => {
  it('lists exactly the tools the task was offered, with their descriptions and input schemas', async () => {
    const { client } = await connect(answerer());
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools).toEqual([
      { name: 'Write', description: WRITE_TOOL.description, inputSchema: WRITE_TOOL.input_schema },
      { name: 'Big', inputSchema: { type: 'object', properties: {} } },
      { name: 'Fails', description: 'Always refused', inputSchema: { type: 'object' } },
      { name: 'Slow', inputSchema: { type: 'object' } },
    ]);
  });

  it('forwards a call once, arguments as given, and returns the answer as text', async () => {
    const host = answerer();
    const { client, relay } = await connect(host);
    const result = await client.callTool({ name: 'Write', arguments: { file_path: '/home/user/p/a.txt', content: 'hello' } });
    expect(result).toEqual({ content: [{ type: 'text', text: 'wrote 5 bytes to /home/user/p/a.txt' }] });
    expect(host.calls).toEqual([{ name: 'Write', args: { file_path: '/home/user/p/a.txt', content: 'hello' } }]);
    expect(relay.calls).toBe(1);
  });

  it("returns the caller's error as an isError result, not a protocol error", async () => {
    const { client } = await connect(answerer());
    const result = await client.callTool({ name: 'Fails', arguments: {} });
    expect(result).toEqual({ content: [{ type: 'text', text: 'the user refused this edit' }], isError: true });
  });

  it('answers a call to a tool that was not offered with isError naming the offered ones, without forwarding it', async () => {
    const host = answerer();
    const { client } = await connect(host);
    const result = await client.callTool({ name: 'Bash', arguments: { command: 'ls' } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'no tool named "Bash" was offered; the tools are: Write, Big, Fails, Slow' }]);
    expect(host.calls).toEqual([]);
  });

  it('returns a 10 MB result whole', async () => {
    const { client } = await connect(answerer());
    const result = await client.callTool({ name: 'Big', arguments: {} });
    const content = result.content as Array<{ type: string; text: string }>;
    expect(content).toHaveLength(1);
    expect(content[0]!.text.length).toBe(TEN_MB);
    expect(content[0]!.text.endsWith('xy')).toBe(true);
  }, 60_000);

  it("passes the MCP client's cancellation on: the tool call is aborted", async () => {
    const host = answerer();
    const { client } = await connect(host);
    const controller = new AbortController();
    const call = client.callTool({ name: 'Slow', arguments: {} }, undefined, { signal: controller.signal });
    await waitFor(() => host.calls.length === 1, 'the call to reach the answerer');
    controller.abort();
    await expect(call).rejects.toThrow();
    await waitFor(() => host.aborted.length === 1, 'the answerer to see the abort');
    expect(host.aborted).toEqual(['Slow']);
  });

  it('keeps its socket in a private 0700 directory, removed on close, and exits when the agent goes', async () => {
    const { relay, transport } = await connect(answerer());
    expect(fs.statSync(relay.dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(relay.socketPath).isSocket()).toBe(true);
    expect(relay.args.join(' ')).not.toMatch(/token/i);
    const pid = transport.pid!;
    expect(isAlive(pid)).toBe(true);
    await relay.close();
    expect(fs.existsSync(relay.dir)).toBe(false);
    await waitFor(() => !isAlive(pid), 'the relay process to exit');
  });

  it('exits when its stdin ends (the CLI is done), aborting the calls in flight', async () => {
    const host = answerer();
    const { client, transport } = await connect(host);
    const pid = transport.pid!;
    void client.callTool({ name: 'Slow', arguments: {} }).catch(() => {});
    await waitFor(() => host.calls.length === 1, 'the call to reach the answerer');
    await client.close();
    await waitFor(() => !isAlive(pid), 'the relay process to exit');
    await waitFor(() => host.aborted.length === 1, 'the call in flight to be aborted');
  });

  it('puts its socket under /tmp when the temporary directory is too long for a socket path', async () => {
    const long = fs.mkdtempSync(path.join(os.tmpdir(), `${'d'.repeat(90)}-`));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = long;
    try {
      const host = answerer();
      const { client, relay } = await connect(host);
      expect(relay.dir.startsWith('/tmp/bc-relay-')).toBe(true);
      expect(Buffer.byteLength(relay.socketPath)).toBeLessThanOrEqual(107);
      expect(fs.statSync(relay.dir).mode & 0o777).toBe(0o700);
      expect(await client.callTool({ name: 'Write', arguments: { file_path: 'a', content: 'b' } })).toEqual({
        content: [{ type: 'text', text: 'wrote 1 bytes to a' }],
      });
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      fs.rmSync(long, { recursive: true, force: true });
    }
  });

  it('says in one line why it cannot start when the relay socket is not there', async () => {
    const relay = await openToolRelay(answerer());
    await relay.close();
    const { spawnSync } = await import('node:child_process');
    const run = spawnSync(relay.command, [...relay.args], { encoding: 'utf8', input: '' });
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^backchannel relay: cannot reach the agent at .*relay\.sock: .*ENOENT/);
  });
});
