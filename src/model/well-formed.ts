/**
 * Text every strict JSON parser accepts. A lone UTF-16 surrogate — half of a pair, from a prompt, a
 * label or an agent's JSON `"\ud800"` — is written by `JSON.stringify` as the escape `\ud800`, which
 * strict parsers (jq, and any that checks UTF-16 pairs) refuse, and with it the whole document: one
 * task's label broke `tasks --json` and `GET /api/tasks` for every task (Y51). Here each lone
 * surrogate becomes U+FFFD, as a UTF-8 encoder would write it anyway.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` with each lone surrogate replaced by U+FFFD (the same string when it has none). */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}

/** A lone surrogate's escape in JSON text, after an even number of backslashes (an odd one escapes the `\`). */
const LONE_ESCAPE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/g;

/**
 * `JSON.stringify(value, null, space)` with every lone surrogate, in a key or a value, written as
 * `\ufffd`. `JSON.stringify` escapes only lone surrogates (a pair is written as is), so the text is
 * looked at only when it holds such an escape: a big result costs one `includes`.
 */
export function wellFormedJson(value: unknown, space?: number): string {
  return wellFormedJsonText(JSON.stringify(value, null, space) ?? 'null');
}

/** JSON text (or a piece of it that cuts no string) with each lone surrogate's escape written as `\ufffd`. */
export function wellFormedJsonText(json: string): string {
  return json.includes('\\ud') ? json.replace(LONE_ESCAPE, '$1\\ufffd') : json;
}
