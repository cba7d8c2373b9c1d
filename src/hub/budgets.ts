/**
 * The owner's default budgets by door, from the config file's `budget:` section (the decision is the
 * core's, src/broker/guards/budget.ts). A wrong section throws its one-line error: a hub does not run
 * with less of a guard than its owner wrote.
 */
import { parseDoorBudgets, type DoorBudgets } from '../broker/guards/budget.js';
import { loadConfig, type LoadedConfig } from '../config/file.js';

export function ownerBudgets(config: LoadedConfig = loadConfig()): DoorBudgets | undefined {
  return parseDoorBudgets(config.sections.budget, config.path);
}
