/**
 * What a Codex thread has used so far, read from the session file Codex keeps for it
 * (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`, CODEX_HOME defaulting to
 * ~/.codex): its last `token_count` event's `total_token_usage`. A resumed thread's
 * `turn.completed.usage` counts the earlier runs too; this is what to subtract from it.
 * Undefined when the file or the event cannot be found (the format is Codex's own and may change).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function codexHome(env = process.env) {
  return env.CODEX_HOME || path.join(os.homedir(), '.codex');
}

/** The session file of thread `id`, newest day first; undefined if there is none. */
export function sessionFile(id, home = codexHome()) {
  if (typeof id !== 'string' || id === '') return undefined;
  const suffix = `-${id}.jsonl`;
  const entries = (dir) => {
    try {
      return fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return [];
    }
  };
  const walk = (dir, depth) => {
    const found = entries(dir).sort((a, b) => b.name.localeCompare(a.name));
    for (const entry of found) {
      const full = path.join(dir, entry.name);
      if (depth === 0 && entry.isFile() && entry.name.startsWith('rollout-') && entry.name.endsWith(suffix)) return full;
      if (depth > 0 && entry.isDirectory()) {
        const hit = walk(full, depth - 1);
        if (hit) return hit;
      }
    }
    return undefined;
  };
  return walk(path.join(home, 'sessions'), 3);
}

/** The thread's total usage so far (Codex's field names), or undefined. */
export function threadUsage(id, home = codexHome()) {
  const file = sessionFile(id, home);
  if (!file) return undefined;
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    if (!lines[i].includes('"token_count"')) continue;
    try {
      const usage = JSON.parse(lines[i])?.payload?.info?.total_token_usage;
      if (usage && typeof usage === 'object') return usage;
    } catch {
      // a torn line: look further back
    }
  }
  return undefined;
}
