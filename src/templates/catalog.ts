/**
 * The one catalog of templates: the sub-agent scaffolds shipped in `templates/`, each directory with
 * a `template.json` manifest, scaffolded by `backchannel new` (./scaffold.ts). What the panel can
 * start (its presets, some made from these templates) is ./presets.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  /**
   * A coding agent: started from the panel (or MCP) it runs in a git worktree of its own in the
   * repository the user picks as cwd (docs/coding-agents.md), not in the template's directory.
   */
  worktree?: boolean;
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
  if (m.worktree !== undefined && typeof m.worktree !== 'boolean') fail('"worktree" must be true or false');
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
