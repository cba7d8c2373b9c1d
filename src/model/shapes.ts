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
 * the branch that got furthest (the deepest place, then one whose type matched), else the union's own
 * message (no branch took the value's type).
 */
export function firstIssue(issues: readonly Issue[]): { issue: Issue; path: PropertyKey[] } | undefined {
  let issue: Issue | undefined = issues[0];
  if (!issue) return undefined;
  let path: PropertyKey[] = [...issue.path];
  while (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const next = furthest(issue.errors);
    if (!next || (next.code === 'invalid_type' && next.path.length === 0)) break;
    issue = next;
    path = [...path, ...next.path];
  }
  return { issue, path };
}

function furthest(branches: readonly (readonly Issue[])[]): Issue | undefined {
  let best: Issue | undefined;
  const score = (issue: Issue) => issue.path.length * 2 + (issue.code === 'invalid_type' ? 0 : 1);
  for (const branch of branches) {
    const first = branch[0];
    if (first && (!best || score(first) > score(best))) best = first;
  }
  return best;
}

/**
 * A failed parse in one line, its `{path}` filled in. `place`: the name of the value parsed (an
 * argument's), put before the place inside it (`ids` → `ids[0]`); without it a field's place is its
 * own path (`limit`), and the whole value is `value`.
 */
export function firstProblem(error: z.core.$ZodError, place?: PropertyKey): string {
  const first = firstIssue(error.issues);
  if (!first) return 'Invalid input';
  const path = place === undefined ? first.path : [place, ...first.path];
  return first.issue.message.replace(PLACE, formatPath(path) || 'value');
}

/** `value` parsed by `schema`, or throws what `fail` makes of the one-line problem. */
export function parseOrThrow<T extends z.core.$ZodType>(
  schema: T,
  value: unknown,
  fail: (message: string) => Error,
  place?: PropertyKey,
): z.core.output<T> {
  const parsed = z.safeParse(schema, value);
  if (!parsed.success) throw fail(firstProblem(parsed.error, place));
  return parsed.data;
}

/** A value as a config message quotes it: its JSON (`"/a"`, `5`, `{"x":1}`). */
export function quote(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** The message of a config field: `<place> must be <what>, got <its JSON>` (`phrase` is the part after the place). */
export function must(phrase: string): (issue: { input?: unknown }) => string {
  return (issue) => `${PLACE} ${phrase}, got ${quote(issue.input)}`;
}

/**
 * A config mapping's unknown key: `<place> has no key "x" (expected a, b), got <its value>`. For
 * `strictObject`'s `error`; other issues fall through to the fields' own messages.
 */
export function noKey(expectedKeys: string): (issue: z.core.$ZodRawIssue) => string | undefined {
  return (issue) => {
    if (issue.code !== 'unrecognized_keys') return undefined;
    const key = String(issue.keys[0]);
    return `${PLACE} has no key "${key}" (expected ${expectedKeys}), got ${quote((issue.input as Record<string, unknown>)[key])}`;
  };
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

/** A parsed object without the keys whose value is `undefined` (an optional field that was not given). */
export function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
