/**
 * Templates the panel offers under "New task": ready-to-run requests read from a directory's
 * `templates.json` (`[{name, description, args, command?}]`, `command` defaulting to `agent.mjs`
 * in that directory). Backchannel ships the demo agents in scripts/demo-agents this way.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TemplateInfo } from '../../bridge/contract.js';

interface TemplateEntry {
  name: string;
  description: string;
  command?: string;
  args?: string[];
}

/** scripts/demo-agents in a checkout (dist/main/bridge → ../../../scripts/demo-agents). */
export function defaultTemplatesDir(): string {
  return fileURLToPath(new URL('../../../scripts/demo-agents/', import.meta.url));
}

/** Reads `templates.json`; a missing or broken file gives no templates (the panel still works). */
export function loadTemplates(dir: string, onError?: (message: string) => void): TemplateInfo[] {
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
