/**
 * The owner's guards for every task of a hub, from the config file: the default budgets by door
 * (`budget:`, decided by the core: src/broker/guards/budget.ts), and the default deadline and
 * heartbeat watchdog (`serve: { timeout: 2h, heartbeat_timeout: 30s }`, durations; 0 turns one off).
 * A wrong value throws its one-line error: a hub does not run with less of a guard than its owner wrote.
 */
import { parseDoorBudgets, type DoorBudgets } from '../broker/guards/budget.js';
import type { BrokerOptions } from '../broker/settings.js';
import { loadConfig, type LoadedConfig } from '../config/file.js';
import { commandSection } from '../config/sections.js';
import { ownerAcp } from './acp-agents.js';

export function ownerBudgets(config: LoadedConfig = loadConfig()): DoorBudgets | undefined {
  return parseDoorBudgets(config.sections.budget, config.path);
}

/** The budgets, and the deadline and watchdog a task that sets none gets (only those the file sets). */
export function ownerTaskGuards(config: LoadedConfig = loadConfig()): Pick<BrokerOptions, 'budgets' | 'defaults' | 'watchdogMs' | 'acp'> {
  const { timeout, heartbeat_timeout: watchdog } = commandSection(config, 'serve');
  const budgets = ownerBudgets(config);
  const acp = ownerAcp(config);
  return {
    ...(budgets ? { budgets } : {}),
    ...(acp ? { acp } : {}),
    ...(timeout !== undefined ? { defaults: { timeoutMs: timeout } } : {}),
    ...(watchdog !== undefined ? { watchdogMs: watchdog } : {}),
  };
}
