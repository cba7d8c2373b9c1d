/**
 * Templates the panel offers under "New task": the demo agents, read from a directory's
 * `templates.json` (`[{name, description, args, command?}]`, `command` defaulting to `agent.mjs`
 * in that directory; Backchannel ships scripts/demo-agents this way), followed by the sub-agent
 * templates of `templates/` (their `template.json` manifests, run in their own directory).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TemplateInfo } from '../bridge/contract.js';
import { listTemplates, toTemplateInfo } from './catalog.js';

interface TemplateEntry {
  name: string;
  description: string;
  command?: string;
  args?: string[];
}

/** scripts/demo-agents in a checkout (dist/templates → ../../scripts/demo-agents). */
export function defaultTemplatesDir(): string {
  return fileURLToPath(new URL('../../scripts/demo-agents/', import.meta.url));
}

/**
 * Demo agents from `dir`, then the sub-agent templates under `templatesDir` (default: this
 * installation's `templates/`). A missing or broken file gives fewer entries, never an error.
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
  const file = join(dir, 'templates.json');
  if (!existsSync(file)) return [];
  try {
    const entries = JSON.parse(readFileSync(file, 'utf8')) as TemplateEntry[];
    return entries.map((entry) => ({
      name: entry.name,
      description: entry.description,
      request: {
        command: resolve(dir, entry.command ?? 'agent.mjs'),
        args: entry.args ?? [],
        label: `${entry.name} (demo agent)`,
      },
    }));
  } catch (error) {
    onError?.(`could not read templates from ${file}: ${(error as Error).message}`);
    return [];
  }
}
