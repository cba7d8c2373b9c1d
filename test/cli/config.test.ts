import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir, waitFor } from '../helpers/core.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

/** A private HOME and XDG config dir, so the user's own files are never read. */
function home() {
  const dir = tempDir('bc-config-');
  const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'xdg'), CURSOR_IPC_DIR: path.join(dir, 'ipc') };
  delete env.BACKCHANNEL_CONFIG;
  const file = path.join(dir, 'xdg', 'backchannel', 'config.yaml');
  const write = (text: string) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  };
  const cli = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { cwd: dir, env, encoding: 'utf8' });
  return { dir, env, file, write, cli };
}

describe('the one config file', () => {
  test('config path names the XDG file; config show prints its sections', () => {
    const h = home();
    expect(h.cli(['config', 'path']).stdout.trim()).toBe(h.file);
    expect(h.cli(['config', 'show']).stdout).toContain('does not exist');
    h.write('run:\n  timeout: 400\nserve:\n  keep_token: true\n');
    expect(JSON.parse(h.cli(['config', 'show', '--json']).stdout)).toEqual({
      path: h.file,
      exists: true,
      sections: { run: { timeout: 400 }, serve: { keep_token: true } },
    });
    h.write('runn:\n  timeout: 1\n');
    const wrong = h.cli(['config', 'show']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain('unknown section "runn"');
  });

  test("config show hides secrets (webhook secrets, agents' env) unless --show-secrets", () => {
    const h = home();
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    h.write(
      [
        'notify:',
        `  webhooks: [{ url: "https://example.com/hook", events: [ended], secret: ${secret} }]`,
        'acp:',
        '  agents:',
        '    claude: { command: claude-agent-acp, env: { ANTHROPIC_API_KEY: sk-ant-visible-nowhere } }',
        '',
      ].join('\n'),
    );
    for (const args of [
      ['config', 'show'],
      ['config', 'show', '--json'],
    ]) {
      const shown = h.cli(args);
      expect(shown.status, shown.stderr).toBe(0);
      expect(shown.stdout).not.toContain(secret);
      expect(shown.stdout).not.toContain('sk-ant-visible-nowhere');
      expect(shown.stdout).toContain('[hidden]');
      // What is not a secret is still shown as it is.
      expect(shown.stdout).toContain('https://example.com/hook');
      expect(shown.stdout).toContain('claude-agent-acp');
    }
    const json = JSON.parse(h.cli(['config', 'show', '--json']).stdout);
    expect(json.sections.acp.agents.claude.env).toEqual({ ANTHROPIC_API_KEY: '[hidden]' });
    const all = h.cli(['config', 'show', '--show-secrets']);
    expect(all.stdout).toContain(secret);
    expect(all.stdout).toContain('sk-ant-visible-nowhere');
  });

  test('run takes its defaults from the run section; the command line wins', () => {
    const h = home();
    h.write('run:\n  timeout: 300\n');
    const timedOut = h.cli(['run', '--', 'sh', '-c', 'sleep 5']);
    expect(timedOut.status).toBe(124);
    const wins = h.cli([
      'run',
      '--timeout',
      '20000',
      '--',
      'sh',
      '-c',
      `printf 'data: {"task_id":"%s","status":"success"}\\n\\n' "$CURSOR_TASK_ID"`,
    ]);
    expect(wins.status).toBe(0);
    h.write('run:\n  timeout: soon\n');
    const bad = h.cli(['run', '--', 'true']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('run.timeout must be a duration such as 90s, 10m, 2h (or milliseconds), got "soon"');
  });

  test('the gateway reads its section, or its old ~/.backchannel/config.yaml with a notice', async () => {
    const h = home();
    const start = async () => {
      const child = spawn(process.execPath, [BIN, 'gateway', '--port', '0'], { cwd: h.dir, env: h.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise((resolve) => child.on('close', resolve));
      await waitFor(() => output.includes('Config:') || child.exitCode !== null, 'the gateway banner', 30_000);
      child.kill('SIGINT');
      await exited;
      return output;
    };
    const legacy = path.join(h.dir, '.backchannel', 'config.yaml');
    fs.mkdirSync(path.dirname(legacy), { recursive: true });
    fs.writeFileSync(legacy, 'request_timeout_ms: 1234\n');
    const old = await start();
    expect(old).toContain(`reading ${legacy}, the gateway's old config file; move its settings under \`gateway:\` in ${h.file}`);
    expect(old).toContain(`Config: ${legacy}`);
    h.write('gateway:\n  request_timeout_ms: 1234\n');
    const one = await start();
    expect(one).toContain(`Config: ${h.file} (gateway section)`);
    expect(one).not.toContain('old config file');
  });
});
