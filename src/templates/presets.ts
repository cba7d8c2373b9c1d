/**
 * The panel's presets: what "New task" offers to start with one click, each a name, a line of
 * description and a ready-to-run request. Two sources, in this order:
 * - the demo agents of a directory, listed in its `demo-agents.json` (`[{name, description, args,
 *   command?}]`, `command` defaulting to `agent.mjs` in that directory; Backchannel ships
 *   scripts/demo-agents this way, and `backchannel worker --presets <dir>` allows the same list);
 * - the agent of each sub-agent template in the catalog (./catalog.ts), run in its own directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PresetInfo } from '../bridge/contract.js';
import { listTemplates, type Template } from './catalog.js';

/** The file that lists a directory's demo agents (the worker's `--presets` reads it too). */
export const DEMO_AGENTS_FILE = 'demo-agents.json';
/** Its name before presets and scaffolds had their own names: still read when a directory has no DEMO_AGENTS_FILE. */
export const LEGACY_DEMO_AGENTS_FILE = 'templates.json';

/** scripts/demo-agents in a checkout (dist/templates → ../../scripts/demo-agents). */
export function defaultDemoAgentsDir(): string {
  return fileURLToPath(new URL('../../scripts/demo-agents/', import.meta.url));
}

/**
 * A template's agent as a preset: a ready-to-run request in the template's own directory, its
 * script given by absolute path (so the same agent runs when a front-end starts it in another
 * directory, and the run policy judges the agent, not whatever `agent.mjs` lies there).
 */
export function presetOf(template: Template): PresetInfo {
  const [command, ...run] = template.run as [string, ...string[]];
  const args = run.map((arg) => inTemplate(template, arg));
  if (template.worktree) return codingPresetOf(template, command, args);
  return {
    name: template.name,
    description: template.description,
    request: {
      // A script run as the command (basic's `agent.ts`) by absolute path too: started in another
      // directory, it is still this template's agent (it was refused there as another program).
      command: inTemplate(template, command),
      args,
      cwd: template.dir,
      label: `${template.name} (template)`,
      ...(template.input !== undefined ? { input: template.input } : {}),
    },
  };
}

/**
 * A coding agent's preset: it runs where the user points it (the New task form's directory, a
 * repository) in a worktree of its own, so its files are named by absolute path and it has no cwd.
 */
/** An argument naming a file of the template (its script), as an absolute path: what the run policy matches. */
function inTemplate(template: Template, arg: string): string {
  return !arg.startsWith('-') && existsSync(path.join(template.dir, arg)) ? path.join(template.dir, arg) : arg;
}

function codingPresetOf(template: Template, command: string, args: string[]): PresetInfo {
  return {
    name: template.name,
    description: template.description,
    request: {
      command: inTemplate(template, command),
      args,
      label: `${template.name} (template)`,
      worktree: true,
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
 * What the panel offers under "New task": the demo agents of `demoAgentsDir`, then the agents of the
 * sub-agent templates under `templatesDir` (default: this installation's `templates/`). A missing or
 * broken file gives fewer presets, never an error.
 */
export function loadPresets(demoAgentsDir: string, onError?: (message: string) => void, templatesDir?: string): PresetInfo[] {
  let fromCatalog: PresetInfo[] = [];
  try {
    fromCatalog = listTemplates(templatesDir).map(presetOf);
  } catch (error) {
    onError?.(`could not read the sub-agent templates: ${(error as Error).message}`);
  }
  return [...loadDemoAgents(demoAgentsDir, onError), ...fromCatalog];
}

/** Reads the directory's demo-agent list; a missing or broken file gives no demo agents (the panel still works). */
function loadDemoAgents(dir: string, onError?: (message: string) => void): PresetInfo[] {
  const file = [DEMO_AGENTS_FILE, LEGACY_DEMO_AGENTS_FILE].map((name) => path.join(dir, name)).find((candidate) => existsSync(candidate));
  if (file === undefined) return [];
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
    onError?.(`could not read the demo agents from ${file}: ${(error as Error).message}`);
    return [];
  }
}
