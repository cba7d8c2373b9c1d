/**
 * The one catalog of templates:
 * - the sub-agent templates shipped in `templates/`: each directory with a `template.json` manifest,
 *   scaffolded by `backchannel new` (./scaffold.ts) and offered by the panel;
 * - the demo agents the panel offers first under "New task", read from a directory's
 *   `templates.json` (`[{name, description, args, command?}]`, `command` defaulting to `agent.mjs`
 *   in that directory; Backchannel ships scripts/demo-agents this way).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TemplateInfo } from '../bridge/contract.js';

/** `templates/<name>/template.json`. */
export interface TemplateManifest {
  name: string;
  /** One line, shown by `backchannel new --list` and in the panel. */
  description: string;
  /** The command line that runs the agent from its own directory, e.g. `["python3", "agent.py"]`. */
  run: string[];
  /** An example input (what `backchannel run --input` and the panel start it with). */
  input?: unknown;
  /** What must be installed besides Node, in words (shown by `--list`). */
  requires?: string[];
  /**
   * Files or directories from elsewhere in the package that the template uses in place (through a
   * relative import such as `../_shared/run-headless.mjs`) and that `backchannel new` copies into
   * the project, rewriting those imports: one source, no committed copies.
   */
  vendor?: VendorEntry[];
}

/** One vendored file or directory: `from` relative to the package root, `to` relative to the project. */
export interface VendorEntry {
  from: string;
  to: string;
}

export interface Template extends TemplateManifest {
  /** Absolute path of the template directory. */
  dir: string;
}

export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

const NAME = /^[a-z0-9][a-z0-9-]*$/;

/** `templates/` of this installation (dist/templates → ../../templates; src/templates likewise). */
export function templatesRoot(): string {
  return fileURLToPath(new URL('../../templates/', import.meta.url));
}

/** The package root of this installation (the parent of `templates/`): what `vendor[].from` is relative to. */
export function packageRoot(): string {
  return path.resolve(templatesRoot(), '..');
}

/** scripts/demo-agents in a checkout (dist/templates → ../../scripts/demo-agents). */
export function defaultTemplatesDir(): string {
  return fileURLToPath(new URL('../../scripts/demo-agents/', import.meta.url));
}

/** A relative path that stays inside its base: no absolute path, no `..` segment. */
function isInsidePath(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && !path.isAbsolute(value) && !value.split(/[\\/]/).includes('..');
}

/** Checks a parsed manifest; the message names the file and the field. */
export function validateManifest(value: unknown, file: string): TemplateManifest {
  const fail = (what: string): never => {
    throw new TemplateError(`${file}: ${what}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('expected a JSON object');
  const m = value as Record<string, unknown>;
  if (typeof m.name !== 'string' || !NAME.test(m.name)) fail('"name" must be lowercase letters, digits and dashes');
  if (typeof m.description !== 'string' || m.description.trim() === '') fail('"description" must be a non-empty string');
  if (!Array.isArray(m.run) || m.run.length === 0 || !m.run.every((part) => typeof part === 'string' && part !== '')) {
    fail('"run" must be a non-empty array of strings, e.g. ["node", "agent.mjs"]');
  }
  if (m.requires !== undefined && !(Array.isArray(m.requires) && m.requires.every((r) => typeof r === 'string'))) {
    fail('"requires" must be an array of strings');
  }
  if (
    m.vendor !== undefined &&
    !(
      Array.isArray(m.vendor) &&
      m.vendor.every(
        (entry: unknown) =>
          typeof entry === 'object' &&
          entry !== null &&
          isInsidePath((entry as Record<string, unknown>).from) &&
          isInsidePath((entry as Record<string, unknown>).to),
      )
    )
  ) {
    fail('"vendor" must be an array of {"from": "<path in the package>", "to": "<path in the project>"} (relative, no "..")');
  }
  return m as unknown as TemplateManifest;
}

/** Every template under `root`, sorted by name. Directories without a manifest are skipped. */
export function listTemplates(root: string = templatesRoot()): Template[] {
  if (!existsSync(root)) return [];
  const templates: Template[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(root, entry.name);
    const file = path.join(dir, 'template.json');
    if (!existsSync(file)) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new TemplateError(`${file}: not valid JSON (${(error as Error).message})`);
    }
    const manifest = validateManifest(parsed, file);
    if (manifest.name !== entry.name) throw new TemplateError(`${file}: "name" is "${manifest.name}" but the directory is "${entry.name}"`);
    templates.push({ ...manifest, dir });
  }
  return templates.sort((a, b) => a.name.localeCompare(b.name));
}

export function findTemplate(name: string, root: string = templatesRoot()): Template | undefined {
  return listTemplates(root).find((template) => template.name === name);
}

/** A template as the panel offers it: a ready-to-run request in the template's own directory. */
export function toTemplateInfo(template: Template): TemplateInfo {
  const [command, ...args] = template.run as [string, ...string[]];
  return {
    name: template.name,
    description: template.description,
    request: {
      command,
      args,
      cwd: template.dir,
      label: `${template.name} (template)`,
      ...(template.input !== undefined ? { input: template.input } : {}),
    },
  };
}

interface DemoAgentEntry {
  name: string;
  description: string;
  command?: string;
  args?: string[];
}

/**
 * What the panel offers under "New task": the demo agents from `dir`, then the sub-agent templates
 * under `templatesDir` (default: this installation's `templates/`). A missing or broken file gives
 * fewer entries, never an error.
 */
export function loadTemplates(dir: string, onError?: (message: string) => void, templatesDir?: string): TemplateInfo[] {
  let fromCatalog: TemplateInfo[] = [];
  try {
    fromCatalog = listTemplates(templatesDir).map(toTemplateInfo);
  } catch (error) {
    onError?.(`could not read the sub-agent templates: ${(error as Error).message}`);
  }
  return [...loadDemoAgents(dir, onError), ...fromCatalog];
}

/** Reads `templates.json`; a missing or broken file gives no demo agents (the panel still works). */
function loadDemoAgents(dir: string, onError?: (message: string) => void): TemplateInfo[] {
  const file = path.join(dir, 'templates.json');
  if (!existsSync(file)) return [];
  try {
    const entries = JSON.parse(readFileSync(file, 'utf8')) as DemoAgentEntry[];
    return entries.map((entry) => ({
      name: entry.name,
      description: entry.description,
      request: {
        command: path.resolve(dir, entry.command ?? 'agent.mjs'),
        args: entry.args ?? [],
        label: `${entry.name} (demo agent)`,
      },
    }));
  } catch (error) {
    onError?.(`could not read templates from ${file}: ${(error as Error).message}`);
    return [];
  }
}
