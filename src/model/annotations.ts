/**
 * A task's annotations: facts its caller adds while the task runs (`TaskRun.annotate`), such as the
 * gateway's scratch-path guard counts (`meta.bridge_guard`). Declared once here as zod, so every
 * door (in-process, the hub's control endpoint, a fleet) refuses the same things with one line.
 *
 * Guarantees: an annotation is a plain JSON object of at most {@link MAX_ANNOTATION_BYTES} serialized
 * and {@link MAX_ANNOTATION_DEPTH} levels deep; it never names a key the broker writes itself
 * (`BROKER_META_KEYS`). Annotating merges at the top level (a key annotated again is replaced), and
 * the merged whole obeys the same size bound. Runs anywhere: no Node or DOM imports.
 */
import * as z from 'zod/mini';
import { BROKER_META_KEYS } from './task.js';
import { describe, expected, PLACE } from './shapes.js';

/** What one task's annotations may weigh, all together, serialized as JSON (characters). */
export const MAX_ANNOTATION_BYTES = 16 * 1024;
/** How deep an annotation may nest objects and arrays (`{a: {b: 1}}` is 2 deep). */
export const MAX_ANNOTATION_DEPTH = 8;
/** Where the gateway's bridge mode records its scratch-path guard's counts in a task's meta. */
export const BRIDGE_GUARD_KEY = 'bridge_guard';

/** A task's annotations: top-level keys, each any JSON value. */
export type Annotations = Record<string, unknown>;

/** The scratch-path guard's counts of one bridged task (`meta.bridge_guard`), each a count ≥ 0. */
export interface BridgeGuardCounts {
  /** Tool calls whose arguments named the agent's scratch workspace. */
  violations: number;
  /** Of those, the ones answered with a corrective result instead of being forwarded. */
  corrections: number;
  /** Calls to a tool the client did not offer (answered with a corrective result). */
  unknown_tools: number;
  /**
   * 1 when the run was retired and the whole transcript replayed to a new agent (the client's next
   * request did not continue it: results that do not match, an edited history, new text).
   */
  replays: number;
}

/** The counts of `BridgeGuardCounts`, in the order they are shown. */
export const BRIDGE_GUARD_COUNTS = [
  'violations',
  'corrections',
  'unknown_tools',
  'replays',
] as const satisfies readonly (keyof BridgeGuardCounts)[];

/** How deep `value` nests, stopping once past `max` (so a hostile value costs little). */
function depthOf(value: unknown, max: number, depth = 0): number {
  if (typeof value !== 'object' || value === null) return depth;
  if (depth >= max) return depth + 1;
  let deepest = depth + 1;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    deepest = Math.max(deepest, depthOf(item, max, depth + 1));
    if (deepest > max) break;
  }
  return deepest;
}

/** Why `annotations` is refused (one line), or undefined when it is fine. */
export function annotationProblem(annotations: Annotations, place = 'meta'): string | undefined {
  const reserved = Object.keys(annotations).find((key) => (BROKER_META_KEYS as readonly string[]).includes(key));
  if (reserved !== undefined) return `Expected \`${place}\` not to set \`${reserved}\`: the broker writes it`;
  const depth = depthOf(annotations, MAX_ANNOTATION_DEPTH);
  if (depth > MAX_ANNOTATION_DEPTH) return `Expected \`${place}\` to nest at most ${MAX_ANNOTATION_DEPTH} levels deep, got more`;
  let json: string | undefined;
  try {
    json = JSON.stringify(annotations);
  } catch {
    return `Expected \`${place}\` to be plain JSON`;
  }
  if (json === undefined || json.length > MAX_ANNOTATION_BYTES)
    return `Expected \`${place}\` to be at most ${MAX_ANNOTATION_BYTES} characters as JSON, got ${json?.length ?? 0}`;
  return undefined;
}

/** One annotation checked: a JSON object within the bounds above. */
export const ANNOTATIONS = z.record(z.string(), z.unknown(), { error: expected('an object of annotations') }).check((ctx) => {
  if (Array.isArray(ctx.value)) {
    ctx.issues.push({
      code: 'custom',
      input: ctx.value,
      message: `Expected \`${PLACE}\` to be an object of annotations, got ${describe(ctx.value)}`,
    });
    return;
  }
  const problem = annotationProblem(ctx.value, PLACE);
  if (problem) ctx.issues.push({ code: 'custom', input: ctx.value, message: problem });
}) as unknown as z.ZodMiniType<Annotations, unknown>;

/** `earlier` with `next` merged in at the top level (a key of `next` replaces the same key). */
export function mergeAnnotations(earlier: Annotations | undefined, next: Annotations): Annotations {
  return { ...earlier, ...next };
}

/** The guard's counts a task's meta holds (`meta.bridge_guard`), only its non-negative finite numbers. */
export function bridgeGuardOf(meta: Record<string, unknown> | undefined): Partial<BridgeGuardCounts> | undefined {
  const value = meta?.[BRIDGE_GUARD_KEY];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const counts: Record<string, number> = {};
  for (const key of BRIDGE_GUARD_COUNTS) {
    const n = (value as Record<string, unknown>)[key];
    if (typeof n === 'number' && Number.isFinite(n) && n >= 0) counts[key] = n;
  }
  return Object.keys(counts).length > 0 ? counts : undefined;
}
