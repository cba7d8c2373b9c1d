/** The template catalog: manifests that `backchannel new`, the panel and the docs read. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findTemplate, listTemplates, templatesRoot, TemplateError, validateManifest } from '../../src/templates/catalog.js';
import { loadPresets, presetOf } from '../../src/templates/presets.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('the template catalog', () => {
  it('finds every shipped template, each with a README, a test and the file its run command names', () => {
    expect(templatesRoot()).toBe(path.join(root, 'templates') + path.sep);
    const templates = listTemplates();
    expect(templates.map((t) => t.name)).toEqual(['basic', 'claude-code', 'codex', 'cursor-cli', 'llm-agent', 'python', 'raw-node']);
    for (const template of templates) {
      expect(fs.existsSync(path.join(template.dir, 'README.md')), `${template.name} README`).toBe(true);
      expect(fs.existsSync(path.join(template.dir, 'test/agent.test.mjs')), `${template.name} test`).toBe(true);
      const script = template.run.find((part) => /\.(mjs|js|ts|py)$/.test(part));
      expect(script && fs.existsSync(path.join(template.dir, script)), `${template.name} runs ${template.run.join(' ')}`).toBe(true);
    }
  });

  it("turns a template's agent into a preset: a ready-to-run panel request", () => {
    const python = findTemplate('python')!;
    expect(presetOf(python)).toEqual({
      name: 'python',
      description: python.description,
      // The script by absolute path: started in another directory, it is still the template's agent.
      request: {
        command: 'python3',
        args: [path.join(python.dir, 'agent.py')],
        cwd: python.dir,
        label: 'python (template)',
        input: python.input,
      },
    });
    expect(findTemplate('nope')).toBeUndefined();
  });

  it('a coding-agent template ("worktree": true) becomes a preset that runs in a worktree of the repository the user picks', () => {
    const claude = findTemplate('claude-code')!;
    expect(claude.worktree).toBe(true);
    expect(presetOf(claude).request).toEqual({
      command: 'node',
      args: [path.join(claude.dir, 'agent.mjs')],
      label: 'claude-code (template)',
      worktree: true,
      input: claude.input,
    });
    expect(() => validateManifest({ name: 'ok', description: 'x', run: ['a'], worktree: 'yes' }, 'x/template.json')).toThrow(/"worktree"/);
  });

  it('rejects broken manifests with the file and the field in the message', () => {
    const bad: Array<[unknown, RegExp]> = [
      [[], /expected a JSON object/],
      [{ name: 'Bad Name', description: 'x', run: ['a'] }, /"name" must be lowercase/],
      [{ name: 'ok', description: '', run: ['a'] }, /"description"/],
      [{ name: 'ok', description: 'x', run: [] }, /"run" must be a non-empty array/],
      [{ name: 'ok', description: 'x', run: ['node', 3] }, /"run"/],
      [{ name: 'ok', description: 'x', run: ['a'], requires: 'python3' }, /"requires"/],
    ];
    for (const [value, message] of bad) {
      expect(() => validateManifest(value, 'x/template.json')).toThrow(TemplateError);
      expect(() => validateManifest(value, 'x/template.json')).toThrow(message);
    }
  });

  it('refuses a manifest whose name does not match its directory', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-catalog-'));
    try {
      fs.mkdirSync(path.join(dir, 'one'));
      fs.writeFileSync(path.join(dir, 'one/template.json'), JSON.stringify({ name: 'two', description: 'x', run: ['a'] }));
      fs.mkdirSync(path.join(dir, 'no-manifest'));
      expect(() => listTemplates(dir)).toThrow(/"name" is "two" but the directory is "one"/);
      fs.writeFileSync(path.join(dir, 'one/template.json'), JSON.stringify({ name: 'one', description: 'x', run: ['a'] }));
      expect(listTemplates(dir).map((t) => t.name)).toEqual(['one']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("offers the demo agents first, then the templates' agents, as presets", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-presets-'));
    try {
      fs.writeFileSync(path.join(dir, 'demo-agents.json'), JSON.stringify([{ name: 'demo', description: 'a demo', args: ['--x'] }]));
      const presets = loadPresets(dir);
      expect(presets[0]).toEqual({
        name: 'demo',
        description: 'a demo',
        request: { command: path.join(dir, 'agent.mjs'), args: ['--x'], label: 'demo (demo agent)' },
      });
      expect(presets.slice(1).map((p) => p.name)).toEqual(listTemplates().map((t) => t.name));
      const warnings: string[] = [];
      fs.writeFileSync(path.join(dir, 'demo-agents.json'), '{ not json');
      expect(loadPresets(dir, (message) => warnings.push(message)).map((p) => p.name)).toEqual(listTemplates().map((t) => t.name));
      expect(warnings).toEqual([expect.stringContaining('could not read the demo agents from')]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('still reads a demo-agent list under its old name, templates.json, unless demo-agents.json is there', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-presets-'));
    const list = (name: string) => JSON.stringify([{ name, description: name, args: [] }]);
    try {
      fs.writeFileSync(path.join(dir, 'templates.json'), list('old'));
      expect(loadPresets(dir)[0]?.name).toBe('old');
      fs.writeFileSync(path.join(dir, 'demo-agents.json'), list('new'));
      expect(loadPresets(dir).map((p) => p.name)).toEqual(['new', ...listTemplates().map((t) => t.name)]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
