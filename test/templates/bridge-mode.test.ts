/**
 * Bridge mode of the coding-CLI templates (templates/_shared/bridge.mjs): a task offered tools runs
 * its CLI with the stdio MCP relay as its MCP server and the CLI's own tools off. The real broker
 * runs each template with a stand-in CLI (test/fixtures/bridge-cli) that finds the relay the way the
 * real CLI does, lists the tools and calls one through the official MCP client; the call reaches the
 * test's answerer through the broker, and its answer comes back to the CLI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../src/model/tools.js';
import { ROOT, isAlive, waitFor } from '../helpers/core.js';
import { runTask, startBroker, type TestBroker } from '../helpers/broker.js';
import { WRITE_TOOL } from '../helpers/client-tools.js';

const STANDINS = path.join(ROOT, 'test/fixtures/bridge-cli/bin');
const TOOLS: ToolDefinition[] = [
  WRITE_TOOL,
  { name: 'Read', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } },
];

interface BridgeRecord {
  vendor: string;
  argv: string[];
  cwd: string;
  configs: Record<string, string>;
  env: Record<string, string>;
  tools: Array<{ name: string; description?: string; inputSchema: unknown }>;
  results: Array<{ content: Array<{ type: string; text: string }>; isError?: boolean }>;
}

let tb: TestBroker;
beforeAll(async () => {
  tb = await startBroker();
});
afterAll(async () => {
  await tb.close();
});

/** Runs `template` offered TOOLS; the stand-in CLI calls `calls`; the test answers each call with `answer`. */
async function bridged(
  template: string,
  calls: unknown[],
  answer: (name: string, args: unknown) => { content: unknown } | { error: string },
  input: Record<string, unknown> = {},
) {
  const workspace = fs.mkdtempSync(path.join(tb.dir, `${template}-`));
  fs.writeFileSync(path.join(workspace, 'README.md'), '# scratch\n');
  const recordFile = path.join(tb.dir, `${path.basename(workspace)}.record.json`);
  const asked: Array<{ name: string; arguments: unknown }> = [];
  const run = await runTask(
    tb.broker,
    {
      command: 'node',
      args: [path.join(ROOT, 'templates', template, 'agent.mjs')],
      cwd: workspace,
      input: { prompt: 'Write hello to /home/user/p/a.txt', ...input },
      tools: TOOLS,
      env: {
        PATH: `${STANDINS}${path.delimiter}${process.env.PATH ?? ''}`,
        BRIDGE_RECORD: recordFile,
        BRIDGE_CALLS: JSON.stringify(calls),
      },
      timeoutMs: 120_000,
      retries: 0,
    },
    (update, handle) => {
      if (update.kind !== 'tool_call' || !update.toolCall) return;
      asked.push({ name: update.toolCall.name, arguments: update.toolCall.arguments });
      tb.broker.answerToolCall(handle.id, update.toolCall.callId, answer(update.toolCall.name, update.toolCall.arguments));
    },
  );
  const record = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as BridgeRecord;
  return { run, record, asked, workspace };
}

const WRITE = { name: 'Write', arguments: { file_path: '/home/user/p/a.txt', content: 'hello' } };
const wrote = (name: string) => (name === 'Write' ? { content: 'wrote 5 bytes' } : { error: 'no such file' });

describe.each([
  { template: 'claude-code', vendor: 'claude' },
  { template: 'cursor-cli', vendor: 'agent' },
  { template: 'codex', vendor: 'codex' },
])('the $template template offered tools', ({ template, vendor }) => {
  it("relays the CLI's tool call to the task's caller and returns the answer to it", async () => {
    const { run, record, asked } = await bridged(template, [WRITE], wrote);
    expect(run.error, JSON.stringify(run.error?.payload)).toBeUndefined();
    expect(record.vendor).toBe(vendor);
    expect(record.tools.map((t) => t.name)).toEqual(['Write', 'Read']);
    expect(record.tools[0]).toEqual({ name: 'Write', description: TOOLS[0]!.description, inputSchema: TOOLS[0]!.input_schema });
    expect(asked).toEqual([WRITE]);
    expect(record.results).toEqual([{ content: [{ type: 'text', text: 'wrote 5 bytes' }] }]);
    expect((run.payload?.data as { text: string }).text).toBe('wrote 5 bytes');
    expect(record.env).not.toHaveProperty('CURSOR_IPC_TOKEN');
  });

  it("returns the caller's error to the CLI as an isError result", async () => {
    const { run, record } = await bridged(template, [{ name: 'Read', arguments: { file_path: '/nope' } }], wrote);
    expect(run.error).toBeUndefined();
    expect(record.results).toEqual([{ content: [{ type: 'text', text: 'no such file' }], isError: true }]);
  });

  it('leaves nothing behind: the relay process, its private directory, the files written for the CLI', async () => {
    const { record, workspace } = await bridged(template, [WRITE], wrote, { allow_writes: true });
    expect(fs.readdirSync(workspace)).toEqual(['README.md']);
    const relayDir = [record.argv.join(' '), ...Object.values(record.configs)].join(' ').match(/[^\s"[\]]*\/bc-relay-[^/"\s]+/)?.[0] ?? '';
    expect(relayDir).toMatch(/bc-relay-/);
    expect(fs.existsSync(relayDir)).toBe(false);
    await waitFor(() => relayProcesses(relayDir).length === 0, 'the relay process to exit');
  });
});

describe('the argv and config each CLI gets in bridge mode', () => {
  it('Claude Code: the relay as its only MCP server, its tools allowed, no built-in tools, MCP calls allowed to wait', async () => {
    const { record } = await bridged('claude-code', [], wrote, { allow_writes: true });
    const argv = record.argv;
    const configFile = argv[argv.indexOf('--mcp-config') + 1]!;
    expect(argv.slice(argv.indexOf('--mcp-config'), argv.indexOf('--'))).toEqual([
      '--mcp-config',
      configFile,
      '--strict-mcp-config',
      '--allowedTools',
      'mcp__backchannel',
      '--tools',
      '',
    ]);
    expect(argv.slice(-2)).toEqual(['--', 'Write hello to /home/user/p/a.txt']);
    expect(fs.statSync(path.dirname(configFile), { throwIfNoEntry: false })).toBeUndefined(); // removed after the run
    const config = JSON.parse(record.configs[configFile]!) as { mcpServers: Record<string, { command: string; args: string[] }> };
    expect(Object.keys(config.mcpServers)).toEqual(['backchannel']);
    expect(config.mcpServers.backchannel!.command).toBe(process.execPath);
    expect(config.mcpServers.backchannel!.args.at(-1)).toBe(path.join(path.dirname(configFile), 'relay.sock'));
    expect(record.env.MCP_TOOL_TIMEOUT).toBe(String(24 * 60 * 60 * 1000));
  });

  it("Cursor CLI: the workspace's .cursor/mcp.json names the relay, cli.json denies its own tools, --approve-mcps and never --force", async () => {
    const { record, workspace } = await bridged('cursor-cli', [], wrote, { allow_writes: true });
    expect(record.argv).toContain('--approve-mcps');
    expect(record.argv).not.toContain('--force');
    const mcp = JSON.parse(record.configs[path.join(workspace, '.cursor', 'mcp.json')]!) as { mcpServers: Record<string, unknown> };
    expect(Object.keys(mcp.mcpServers)).toEqual(['backchannel']);
    expect(JSON.parse(record.configs[path.join(workspace, '.cursor', 'cli.json')]!)).toEqual({
      permissions: { allow: ['Mcp(backchannel:*)'], deny: ['Shell(*)', 'Read(**)', 'Write(**)', 'WebFetch(*)'] },
    });
  });

  it("Cursor CLI: a workspace's own .cursor/mcp.json gets its bytes back after the run", async () => {
    const workspace = fs.mkdtempSync(path.join(tb.dir, 'cursor-own-'));
    fs.mkdirSync(path.join(workspace, '.cursor'));
    const own = '{"mcpServers": {"mine": {"command": "my-server"}}}\n';
    fs.writeFileSync(path.join(workspace, '.cursor', 'mcp.json'), own);
    const recordFile = path.join(tb.dir, 'cursor-own.record.json');
    const run = await runTask(tb.broker, {
      command: 'node',
      args: [path.join(ROOT, 'templates/cursor-cli/agent.mjs')],
      cwd: workspace,
      input: { prompt: 'hi' },
      tools: TOOLS,
      env: { PATH: `${STANDINS}${path.delimiter}${process.env.PATH ?? ''}`, BRIDGE_RECORD: recordFile, BRIDGE_CALLS: '[]' },
      timeoutMs: 120_000,
      retries: 0,
    });
    expect(run.error).toBeUndefined();
    const record = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as BridgeRecord;
    expect(record.configs[path.join(workspace, '.cursor', 'mcp.json')]).toMatch(/backchannel/);
    expect(fs.readFileSync(path.join(workspace, '.cursor', 'mcp.json'), 'utf8')).toBe(own);
    expect(fs.readdirSync(path.join(workspace, '.cursor'))).toEqual(['mcp.json']);
  });

  it('Codex: the relay as mcp_servers.backchannel in -c values, and a read-only sandbox even with allow_writes', async () => {
    const { record } = await bridged('codex', [], wrote, { allow_writes: true });
    const argv = record.argv;
    expect(argv[argv.indexOf('--sandbox') + 1]).toBe('read-only');
    const values = argv.filter((_, i) => argv[i - 1] === '-c');
    expect(values.map((v) => v.split('=')[0])).toEqual([
      'mcp_servers.backchannel.command',
      'mcp_servers.backchannel.args',
      'mcp_servers.backchannel.tool_timeout_sec',
      'mcp_servers.backchannel.required',
      'mcp_servers.backchannel.default_tools_approval_mode',
    ]);
    expect(values[0]).toBe(`mcp_servers.backchannel.command=${JSON.stringify(process.execPath)}`);
    expect(values[2]).toBe('mcp_servers.backchannel.tool_timeout_sec=86400');
    expect(values[3]).toBe('mcp_servers.backchannel.required=true');
    expect(values[4]).toBe('mcp_servers.backchannel.default_tools_approval_mode="approve"');
    expect(argv.slice(-2)).toEqual(['--', 'Write hello to /home/user/p/a.txt']);
  });

  it('a task offered no tools runs each CLI as before: no MCP flags, no workspace files', async () => {
    const workspace = fs.mkdtempSync(path.join(tb.dir, 'plain-'));
    const recordFile = path.join(workspace, '.argv.json');
    const standins = path.join(ROOT, 'test/fixtures/standins/bin');
    for (const template of ['claude-code', 'cursor-cli', 'codex']) {
      await runTask(tb.broker, {
        command: 'node',
        args: [path.join(ROOT, 'templates', template, 'agent.mjs')],
        cwd: workspace,
        input: { prompt: 'hi' },
        env: { PATH: `${standins}${path.delimiter}${process.env.PATH ?? ''}`, STANDIN_ARGV_FILE: recordFile },
        timeoutMs: 60_000,
        retries: 0,
      });
      const { argv } = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as { argv: string[] };
      expect(argv.join(' ')).not.toMatch(/mcp|--tools|--approve-mcps/);
      expect(fs.existsSync(path.join(workspace, '.cursor'))).toBe(false);
    }
  });
});

/** Live relay processes serving `relayDir` (their argv names its socket). */
function relayProcesses(relayDir: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(relayDir) && isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
