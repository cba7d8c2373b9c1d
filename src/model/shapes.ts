/**
 * The building blocks every wire and config shape is declared with (zod): leaf schemas whose issues
 * read in the repository's one message template, and `firstProblem`, which turns a failed parse into
 * the one line a person reads:
 *
 *   Expected `timeoutMs` to be a non-negative finite number, got `x` (string)
 *
 * A leaf's message holds `{path}` where the value's place goes (`args[3]`, `env.FOO`, `worktree.base`):
 * zod finalizes a message inside a union before the union's own place is known, so the place is filled
 * in once, at the end. Runs anywhere (the panel's bundle too): no Node or DOM imports, and zod's
 * tree-shakable `zod/mini` (the panel's bundle holds only what is used).
 */
import * as z from 'zod/mini';

// The panel's strict CSP (no 'unsafe-eval') reports zod's probe for `new Function` as a violation even
// though zod catches it; in a browser, objects are parsed without the compiled fast path.
if (typeof (globalThis as { document?: unknown }).document !== 'undefined') z.config({ jitless: true });

/** Where the place of a value goes in a message (filled in by `firstProblem`). */
export const PLACE = '{path}';

/** A received value, as a message quotes it: `x` (string), `5` (number), null, an array, object. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `\`${value.slice(0, 40)}\` (string)`;
  if (typeof value === 'number' || typeof value === 'boolean') return `\`${String(value)}\` (${typeof value})`;
  return typeof value;
}

/** `['args', 3]` → `args[3]`, `['env', 'FOO']` → `env.FOO`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

type Issue = z.core.$ZodIssue;

/**
 * The one issue a person is told about, with its whole place: the first; inside a union, the first of
 * the branch that got furthest (the one whose type matched), else the union's own message.
 */
export function firstIssue(issues: readonly Issue[]): { issue: Issue; path: PropertyKey[] } | undefined {
  let issue: Issue | undefined = issues[0];
  if (!issue) return undefined;
  let path: PropertyKey[] = [...issue.path];
  while (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const branch: Issue[] | undefined = issue.errors.find((branchIssues) => {
      const first = branchIssues[0];
      return first !== undefined && !(first.code === 'invalid_type' && first.path.length === 0);
    });
    const next: Issue | undefined = branch?.[0];
    if (!next) break;
    issue = next;
    path = [...path, ...next.path];
  }
  return { issue, path };
}

/** A failed parse in one line, `{path}` filled in (`root` names the place of the whole value). */
export function firstProblem(error: z.core.$ZodError, root = 'value'): string {
  const first = firstIssue(error.issues);
  if (!first) return 'Invalid input';
  const place = formatPath(first.path) || root;
  return first.issue.message.replace(PLACE, place);
}

/** The message of a leaf: `Expected `{path}` to be <expected>, got <the value>`. */
export function expected(what: string): (issue: { input?: unknown }) => string {
  return (issue) => `Expected \`${PLACE}\` to be ${what}, got ${describe(issue.input)}`;
}

/**
 * A string: at most `max` characters, and not blank unless `allowEmpty` (`'empty'`: exactly `''` is
 * allowed, a string of spaces is not).
 */
export function text({ allowEmpty = false, max = 4096 }: { allowEmpty?: boolean | 'empty'; max?: number } = {}) {
  const checks: z.core.$ZodCheck<string>[] = [
    z.maxLength(max, { error: (issue) => `Expected \`${PLACE}\` to be at most ${max} characters, got ${(issue.input as string).length}` }),
  ];
  if (allowEmpty !== true) {
    checks.push(
      z.refine((value: string) => value.trim() !== '' || (allowEmpty === 'empty' && value === ''), {
        error: () => `Expected \`${PLACE}\` to be a non-empty string`,
      }),
    );
  }
  return z.string({ error: expected('a string') }).check(...checks);
}

/** A number ≥ 0 (and finite: zod refuses NaN and ±Infinity as numbers). */
export function nonNegative() {
  const message = expected('a non-negative finite number');
  return z.number({ error: message }).check(z.minimum(0, { error: message }));
}

export function boolean() {
  return z.boolean({ error: expected('a boolean') });
}

/** One of `choices` (an enum of strings). */
export function oneOf<const T extends readonly [string, ...string[]]>(choices: T) {
  return z.enum(choices, { error: expected(`one of ${choices.join(', ')}`) });
}

/** A field's description (in the JSON Schema). */
export function described<T extends z.ZodMiniType>(schema: T, description: string): T {
  return schema.check(z.describe(description)) as T;
}
