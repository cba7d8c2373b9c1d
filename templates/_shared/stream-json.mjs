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

/** The fields that name what a tool works on (describeStep reads them), in the order it looks for them. */
const TARGET_FIELDS = ['command', 'cmd', 'file_path', 'path', 'notebook_path', 'target_file', 'file', 'pattern', 'query', 'url'];

/**
 * A tool call's arguments, shortened for a partial (at most `max` characters of JSON), with the
 * fields that name its target first: a long `content` sent before `file_path` must not cut the path
 * off, or the step would read "Write" instead of "writing notes.md".
 */
export function shortenArgs(args, max = 200) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return shorten(args ?? {}, max);
  const first = TARGET_FIELDS.filter((key) => key in args);
  const ordered = Object.fromEntries([...first, ...Object.keys(args).filter((key) => !first.includes(key))].map((key) => [key, args[key]]));
  return shorten(ordered, max);
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

/** Tool names (Claude Code's, the Cursor CLI's, Codex's items) by what they do to the workspace. */
const STEP_VERBS = [
  [/^(edit|multiedit|str_replace|apply_patch|file_change|notebookedit|search_replace)$/i, 'editing'],
  [/^(write|create|create_file)$/i, 'writing'],
  [/^(read|view|read_file|notebookread)$/i, 'reading'],
  [/^(bash|shell|run_terminal_cmd|command_execution|exec_command|terminal)$/i, 'running'],
  [/^(grep|search|codebase_search)$/i, 'searching for'],
  [/^(glob|ls|list|list_dir)$/i, 'listing'],
  [/^(webfetch|web_fetch|fetch)$/i, 'fetching'],
  [/^(todowrite|update_plan)$/i, 'updating the plan'],
];

/**
 * A tool call in words, for the task row ("editing src/x.ts", "running npm test"): its name and
 * arguments (an object, or their shortened JSON) with a path made relative to `cwd`. Undefined for
 * a tool it does not know (the row then shows the tool's name).
 */
export function describeStep(name, args, cwd = process.cwd()) {
  const verb = STEP_VERBS.find(([pattern]) => pattern.test(String(name ?? '')))?.[1];
  if (verb === undefined) return undefined;
  const text = typeof args === 'string' ? args : (JSON.stringify(args ?? {}) ?? '');
  const field = (names) => {
    const match = new RegExp(`"(?:${names})"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)`).exec(text);
    if (!match) return undefined;
    try {
      return JSON.parse(`"${match[1]}"`);
    } catch {
      return match[1];
    }
  };
  const relative = (file) => (cwd && file.startsWith(`${cwd}/`) ? file.slice(cwd.length + 1) : file);
  const target =
    verb === 'running'
      ? field('command|cmd')
      : verb === 'searching for' || verb === 'listing'
        ? field('pattern|query|path')
        : verb === 'fetching'
          ? field('url')
          : verb === 'updating the plan'
            ? ''
            : field('file_path|path|notebook_path|target_file|file');
  if (target === undefined) return verb === 'updating the plan' ? verb : undefined;
  const shown = verb === 'running' ? target.replace(/^(?:bash|sh) -lc /, '') : relative(target);
  return `${verb} ${shown}`.trim().slice(0, 120);
}
