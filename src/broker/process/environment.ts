/**
 * The environment a sub-agent starts with: the broker's own, filtered by an allow/deny policy, plus
 * the task's hand-off variables, plus a UTF-8 locale when the broker has none.
 */
import { ENV_HEARTBEAT_MS, ENV_IPC_PATH, ENV_IPC_TOKEN, ENV_SPOOL_DIR, ENV_TASK_ATTEMPT, ENV_TASK_ID } from '../../protocol/index.js';

export interface EnvPolicy {
  /** If set, only variables matching one of these patterns pass (`*` is a wildcard). */
  allow?: string[];
  /** Variables matching these never pass. Applied after `allow`. */
  deny?: string[];
  /** Locale set when the broker's environment has none of LANG, LC_ALL, LC_CTYPE. @default 'C.UTF-8' */
  locale?: string;
}

/**
 * Never inherited: hand-off variables of a broker that itself runs as a sub-agent (its token must not
 * reach our agents), Electron's run-as-node switch (would make any Electron app the agent starts boot
 * as Node), and the panel token of a headless server.
 */
export const DEFAULT_DENY = [
  'CURSOR_IPC_*',
  'CURSOR_TASK_*',
  ENV_HEARTBEAT_MS,
  ENV_SPOOL_DIR,
  'ELECTRON_RUN_AS_NODE',
  'BACKCHANNEL_PANEL_TOKEN',
];

function toRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`, process.platform === 'win32' ? 'i' : '');
}

export function filterEnv(source: NodeJS.ProcessEnv, policy: EnvPolicy = {}): Record<string, string> {
  const allow = policy.allow?.map(toRegExp);
  const deny = [...DEFAULT_DENY, ...(policy.deny ?? [])].map(toRegExp);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (allow && !allow.some((re) => re.test(name))) continue;
    if (deny.some((re) => re.test(name))) continue;
    out[name] = value;
  }
  const hasLocale = ['LANG', 'LC_ALL', 'LC_CTYPE'].some((name) => source[name]);
  if (!hasLocale) {
    const locale = policy.locale ?? 'C.UTF-8';
    out.LANG = locale;
    out.LC_ALL = locale;
  }
  // Python agents: without this, stdout is block-buffered in a pipe and fallback lines arrive late.
  out.PYTHONUNBUFFERED ??= '1';
  out.PYTHONIOENCODING ??= 'utf-8';
  return out;
}

export interface HandOff {
  taskId: string;
  endpoint: string;
  token: string;
  attempt: number;
  heartbeatTimeoutMs: number;
  spoolDir: string;
}

export function handOffEnv(handOff: HandOff): Record<string, string> {
  const env: Record<string, string> = {
    [ENV_TASK_ID]: handOff.taskId,
    [ENV_IPC_PATH]: handOff.endpoint,
    [ENV_IPC_TOKEN]: handOff.token,
    [ENV_TASK_ATTEMPT]: String(handOff.attempt),
    [ENV_SPOOL_DIR]: handOff.spoolDir,
  };
  if (handOff.heartbeatTimeoutMs > 0) env[ENV_HEARTBEAT_MS] = String(Math.max(50, Math.floor(handOff.heartbeatTimeoutMs / 3)));
  return env;
}
