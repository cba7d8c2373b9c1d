/**
 * The owner's named ACP agents (the config file's `acp: agents:`, docs/acp.md) as presets: `acp:<name>`
 * runs that agent's command line as an ACP task, so the panel's New task, MCP `run_task {preset}`,
 * schedules and the run policy treat it as any preset the owner ships. Only the config names them:
 * never a task's input or request (docs/acp.md, "Named agents"). The agent's environment is not in the
 * preset: the broker's ACP kind adds it to that command line only (src/broker/acp/).
 */
import { agentPresetName, parseAcpConfig, type AcpOptions } from '../broker/acp/index.js';
import type { PresetInfo } from '../bridge/contract.js';
import { loadConfig, type LoadedConfig } from '../config/file.js';

/** The `acp:` section read (throws its one-line error naming the field). */
export function ownerAcp(config: LoadedConfig = loadConfig()): AcpOptions | undefined {
  return parseAcpConfig(config.sections.acp, config.path);
}

/** A preset per named agent, in the config's order. */
export function acpAgentPresets(config: LoadedConfig = loadConfig()): PresetInfo[] {
  const agents = ownerAcp(config)?.agents ?? {};
  return Object.entries(agents).map(([name, agent]) => ({
    name: agentPresetName(name),
    description: `ACP agent ${name}: ${[agent.command, ...agent.args].join(' ')}`,
    request: {
      command: agent.command,
      args: agent.args,
      label: `${name} (ACP agent)`,
      acp: { agent: name },
      ...(agent.prompt !== undefined ? { input: agent.prompt } : {}),
    },
  }));
}
