/**
 * What the agent child inherits: the adapter's environment without its settings (`BACKCHANNEL_ACP`)
 * or the task's hand-off (id, endpoint, token), so the agent can neither read the adapter's policy
 * nor report to the task itself. Kept apart from settings.ts so the agent starts before zod loads.
 */
import { ENV_ACP_SETTINGS } from '../protocol/acp-settings.js';
import { HAND_OFF_VARIABLES } from '../protocol/env.js';

export const SETTINGS_VARIABLE = ENV_ACP_SETTINGS;

export function agentEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const copy = { ...env };
  for (const name of [SETTINGS_VARIABLE, ...HAND_OFF_VARIABLES]) delete copy[name];
  return copy;
}
