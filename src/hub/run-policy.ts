/**
 * The owner's run policy, as a hub (and a front-end's private broker) enforces it: what the owner
 * ships or configures may run from every door — the presets the panel offers (the demo agents and
 * the shipped templates' agents), the `command` models of the config file's `gateway:` section —
 * and whatever the config file's `run_policy:` section allows (docs/run-policy.md). The decision
 * itself is the core's (src/broker/run-policy.ts).
 */
import path from 'node:path';
import type { PresetInfo } from '../bridge/contract.js';
import { expandPath, parseRunPolicy, RunPolicy, type RunRule } from '../broker/run-policy.js';
import { loadConfig, type LoadedConfig } from '../config/file.js';
import { defaultDemoAgentsDir, loadPresets } from '../templates/presets.js';

export interface OwnerPolicyOptions {
  /** The config file, read. @default loadConfig() */
  config?: LoadedConfig;
  /** What the panel offers. @default the demo agents of scripts/demo-agents and the shipped templates */
  presets?: readonly PresetInfo[];
  /** More rules from the owner (a gateway's own models). */
  extra?: readonly RunRule[];
}

/** Throws the config file's error (a wrong `run_policy` section names the field) rather than run with less. */
export function ownerRunPolicy(options: OwnerPolicyOptions = {}): RunPolicy {
  const config = options.config ?? loadConfig();
  const presets = options.presets ?? loadPresets(defaultDemoAgentsDir());
  const rules = [
    ...presets.map(presetRule),
    ...gatewayModelRules(config),
    ...parseRunPolicy(config.sections.run_policy, config.path),
    ...(options.extra ?? []),
  ];
  return new RunPolicy(rules, config.path);
}

/** A preset runs exactly as the panel would start it (the same arguments, in any directory). */
export function presetRule(preset: PresetInfo): RunRule {
  const { command, args = [], cwd } = preset.request;
  return { name: `preset ${preset.name}`, preset: preset.name, command, args, ...(cwd ? { base: cwd } : {}) };
}

/**
 * The `command` models of the config file's `gateway:` section, for the gateway's tasks, as it runs them (the
 * command resolved against the file's directory, the arguments as written). The built-in
 * `cursor-cli` and `claude-code` models run the shipped templates, which are presets already.
 */
function gatewayModelRules(config: LoadedConfig): RunRule[] {
  const models = config.sections.gateway?.models;
  if (typeof models !== 'object' || models === null) return [];
  const rules: RunRule[] = [];
  for (const [name, model] of Object.entries(models as Record<string, unknown>)) {
    const { command, args } = (model ?? {}) as { command?: unknown; args?: unknown };
    if (typeof command !== 'string' || command === '') continue;
    const list = Array.isArray(args) && args.every((a) => typeof a === 'string') ? (args as string[]) : [];
    const program = command.includes('/') ? expandPath(command, path.dirname(config.path)) : command;
    rules.push({ name: `gateway model ${name}`, command: program, args: list, origins: ['gateway'] });
  }
  return rules;
}
