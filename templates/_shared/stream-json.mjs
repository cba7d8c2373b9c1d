/**
 * Reading a CLI's stream-json output: strip terminal escapes, decode one event per line, shorten
 * values for progress payloads. Shared by the cursor-cli and claude-code templates: this is the one
 * copy, which `backchannel new` vendors into a scaffolded project (template.json `vendor`).
 */

/** CSI, OSC (terminated by BEL or ST), 8-bit CSI and two-character ESC sequences. */
const ANSI_PATTERN = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;

export function stripAnsi(text) {
  return text.replace(ANSI_PATTERN, '');
}

/**
 * One stdout line → the decoded event object, or `null` for lines that are empty after stripping
 * escapes or are not a JSON object (banners, spinners, warnings): those belong in the log.
 */
export function parseEventLine(line) {
  const clean = stripAnsi(line).trim();
  if (clean === '' || clean[0] !== '{') return null;
  try {
    const value = JSON.parse(clean);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** At most `max` characters (JSON for non-strings), with a marker saying how much was cut. */
export function shorten(value, max = 300) {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** The text parts of a `message.content` (a string, or an array of `{type:'text', text}` parts). */
export function textOf(message) {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((part) => part && part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('');
}
