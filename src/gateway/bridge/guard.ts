/**
 * The scratch-path guard (docs/gateway.md, "Bridge mode"): a prompt only prevents, so every tool
 * call the agent makes to the client is checked before it is forwarded. A call whose string
 * arguments name the agent's scratch workspace (also inside a shell command such as
 * `cd <workspace> && ls`) is not forwarded: the agent gets a corrective result naming the host root
 * and retries. After {@link MAX_CORRECTIONS} corrections in a session, calls are forwarded as they
 * are (the model may be following the user's explicit request).
 *
 * Guarantees: the check is skipped when the host root lies inside the workspace (then naming the
 * workspace is naming the host); a path is matched whole (`/tmp/ws` does not match `/tmp/ws2`).
 */
import path from 'node:path';

/** Corrections per session before calls are forwarded as they are. */
export const MAX_CORRECTIONS = 3;

/** Per session: calls that named the workspace, and how many of them were corrected. */
export interface GuardCounts {
  violations: number;
  corrections: number;
}

/** A string argument that names the workspace: where it is (`command`, `edits[0].path`) and its value. */
export interface Violation {
  where: string;
  value: string;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The first string argument (depth first) that names `workspace`, or undefined. */
export function findViolation(args: unknown, workspace: string, hostRoot: string | undefined): Violation | undefined {
  const root = path.resolve(workspace);
  if (hostRoot !== undefined && (hostRoot === root || hostRoot.startsWith(`${root}/`))) return undefined;
  const names = new RegExp(`${escape(root)}(?![^/\\s'"\`;&|)<>:,])`);
  const walk = (value: unknown, where: string, depth: number): Violation | undefined => {
    if (depth > 32) return undefined;
    if (typeof value === 'string') return names.test(value) ? { where: where || 'arguments', value } : undefined;
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) {
        const found = walk(item, `${where}[${i}]`, depth + 1);
        if (found) return found;
      }
      return undefined;
    }
    if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        const found = walk(item, where ? `${where}.${key}` : key, depth + 1);
        if (found) return found;
      }
    }
    return undefined;
  };
  return walk(args, '', 0);
}

/** The corrective result the agent gets instead of the client's. */
export function correction(violation: Violation, workspace: string, hostRoot: string | undefined): string {
  const where = hostRoot
    ? `Tools run on the client's machine, in ${hostRoot}: use paths there.`
    : "Tools run on the client's machine: use only absolute host paths that appeared in the conversation.";
  return `Not run: \`${violation.where}\` names ${workspace}, your scratch directory, which is not on the client's machine. ${where}`;
}

/**
 * What to do with a call: `forward` it, or `correct` it with `text` (the count goes up). After
 * {@link MAX_CORRECTIONS} corrections a violation is forwarded (and still counted).
 */
export function guardCall(
  args: unknown,
  workspace: string | undefined,
  hostRoot: string | undefined,
  counts: GuardCounts,
): { action: 'forward' } | { action: 'correct'; text: string } {
  if (workspace === undefined) return { action: 'forward' };
  const violation = findViolation(args, workspace, hostRoot);
  if (!violation) return { action: 'forward' };
  counts.violations += 1;
  if (counts.corrections >= MAX_CORRECTIONS) return { action: 'forward' };
  counts.corrections += 1;
  return { action: 'correct', text: correction(violation, workspace, hostRoot) };
}
