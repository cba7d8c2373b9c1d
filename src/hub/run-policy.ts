/**
 * The owner's run policy, as a hub (and a front-end's private broker) enforces it: what the owner
 * ships or configures may run from every door — the presets the panel offers (the demo agents and
 * the shipped templates' agents), the `command` models of the config file's `gateway:` section —
 * and whatever the config file's `run_policy:` section allows (docs/run-policy.md). The decision
 * itself is the core's (src/broker/run-policy.ts).
 *
 * A hub lives long: the config file it read at start is read again when it changes (its mtime, size
 * or inode), at the next judgement, so a model added to `gateway: models:` or a rule added to
 * `run_policy:` applies without a restart. A file that no longer reads keeps the rules read last,
 * and a refusal says so. Every refusal names the file and when the hub read it.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { PresetInfo } from '../bridge/contract.js';
import { expandPath, parseRunPolicy, RunPolicy, type RunRequest, type RunRule, type Verdict } from '../broker/run-policy.js';
import { CONFIG_ENV, loadConfig, type LoadedConfig } from '../config/file.js';
import { defaultDemoAgentsDir, loadPresets } from '../templates/presets.js';
import { acpAgentPresets } from './acp-agents.js';

export interface OwnerPolicyOptions {
  /** The config file, read. @default loadConfig() */
  config?: LoadedConfig;
  /** What the panel offers. @default the demo agents of scripts/demo-agents and the shipped templates */
  presets?: readonly PresetInfo[];
  /** More rules from the owner (a gateway's own models). */
  extra?: readonly RunRule[];
}

/**
 * Throws the config file's error (a wrong `run_policy` section names the field) rather than run with
 * less. Read from the file (no `config` given), the policy follows the file's changes (see the header).
 */
export function ownerRunPolicy(options: OwnerPolicyOptions = {}): RunPolicy {
  const presets = options.presets ?? loadPresets(defaultDemoAgentsDir());
  const build = (config: LoadedConfig) =>
    new RunPolicy(
      [
        ...presets.map(presetRule),
        ...acpAgentPresets(config).map(presetRule),
        ...gatewayModelRules(config),
        ...parseRunPolicy(config.sections.run_policy, config.path),
        ...(options.extra ?? []),
      ],
      config.path,
    );
  if (options.config) return build(options.config);
  const file = loadConfig().path;
  return new FollowedPolicy(file, build);
}

/** The file's identity now: it changed when this did ('' while there is none). */
function fileStamp(file: string): string {
  try {
    const stat = statSync(file, { bigint: true });
    return `${stat.mtimeNs}:${stat.size}:${stat.ino}`;
  } catch {
    return '';
  }
}

/** The owner's policy read from `file`, read again when it changed (see the header). */
class FollowedPolicy extends RunPolicy {
  #current: RunPolicy;
  #stamp: string;
  #readAt = new Date();
  /** Why the file's last change could not be read (the rules read before still hold). */
  #problem: string | undefined;

  constructor(
    private readonly file: string,
    private readonly build: (config: LoadedConfig) => RunPolicy,
  ) {
    const stamp = fileStamp(file);
    const first = build(loadConfig({ ...process.env, [CONFIG_ENV]: file }));
    super(first.rules, file);
    this.#current = first;
    this.#stamp = stamp;
  }

  override match(...args: Parameters<RunPolicy['match']>): RunRule | undefined {
    return this.#fresh().match(...args);
  }

  override judge(request: RunRequest): Verdict {
    const verdict = this.#fresh().judge(request);
    if (verdict.allowed) return verdict;
    const problem = this.#problem ? `; its change since could not be read (${this.#problem})` : '';
    return { ...verdict, message: `${verdict.message} [the hub read ${this.file} at ${this.#readAt.toISOString()}${problem}]` };
  }

  #fresh(): RunPolicy {
    const stamp = fileStamp(this.file);
    if (stamp === this.#stamp) return this.#current;
    this.#stamp = stamp;
    try {
      this.#current = this.build(loadConfig({ ...process.env, [CONFIG_ENV]: this.file }));
      this.#readAt = new Date();
      this.#problem = undefined;
    } catch (error) {
      this.#problem = (error as Error).message;
    }
    return this.#current;
  }
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
