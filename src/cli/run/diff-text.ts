/**
 * A unified diff for a terminal: coloured like `git diff` on a TTY (never when piped, nor with
 * NO_COLOR), agent text neutralised there; and the combined view of several tasks' diffs with their
 * overlaps flagged (../../model/change-overlap.ts).
 */
import type { CombinedView } from '../../model/change-overlap.js';
import { neutralise, writeText } from '../terminal-text.js';

const COLOURS = { meta: '\x1b[1m', hunk: '\x1b[36m', add: '\x1b[32m', remove: '\x1b[31m', flag: '\x1b[33;1m', reset: '\x1b[0m' };

export function wantsColour(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env.NO_COLOR === undefined && env.TERM !== 'dumb';
}

function kindOf(line: string): keyof typeof COLOURS | undefined {
  if (/^(diff --git |index |--- |\+\+\+ |new file mode|deleted file mode|similarity|rename |old mode|new mode)/.test(line)) return 'meta';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'remove';
  return undefined;
}

/** One diff line as shown: coloured by kind when `colour`. */
export function diffLine(line: string, colour: boolean): string {
  if (!colour) return line;
  const kind = kindOf(line);
  const text = neutralise(line);
  return kind ? `${COLOURS[kind]}${text}${COLOURS.reset}` : text;
}

/**
 * Writes what showDiff or showCombined made for `stream`. Coloured, every line of agent text in it
 * is neutralised already and the escapes left are the product's own colours: written as they are
 * (neutralising again turned them into `\uFFFD[32m` garbage). Not coloured, it is agent text as
 * is, neutralised on a terminal by writeText.
 */
export function writeShown(stream: NodeJS.WriteStream, text: string, colour: boolean): void {
  if (colour) stream.write(text);
  else writeText(stream, text);
}

/** A whole diff as shown. */
export function showDiff(diff: string, colour: boolean): string {
  if (!colour) return diff;
  return diff
    .split('\n')
    .map((line) => diffLine(line, true))
    .join('\n');
}

/**
 * The combined view: a summary of the overlaps, then file by file each task's hunks, a hunk that
 * overlaps another task's flagged with "!! overlaps <task> (base lines a–b)".
 */
export function showCombined(view: CombinedView, label: (taskId: string) => string, colour: boolean): string {
  const out: string[] = [];
  // Flags name files and tasks (agent text): neutralised like every coloured line.
  const flag = (text: string) => (colour ? `${COLOURS.flag}${neutralise(text)}${COLOURS.reset}` : text);
  const files = new Set(view.overlaps.map((o) => o.path));
  out.push(
    view.overlaps.length === 0
      ? 'No two tasks touch the same or adjacent lines.'
      : flag(
          `!! ${view.overlaps.length} overlap${view.overlaps.length === 1 ? '' : 's'} in ${files.size} file${files.size === 1 ? '' : 's'}: ${[...files].join(', ')}`,
        ),
  );
  for (const file of view.files) {
    out.push('', diffLine(`=== ${file.path} (${file.parts.map((part) => label(part.taskId)).join(', ')})`, colour));
    for (const part of file.parts) {
      const whole = file.overlaps.filter((o) => o.kind === 'file' && (o.a.taskId === part.taskId || o.b.taskId === part.taskId));
      out.push(diffLine(`--- task ${label(part.taskId)}: ${part.file.status}`, colour));
      for (const o of whole)
        out.push(
          flag(`!! the file is ${part.file.status} here and changed by ${label(o.a.taskId === part.taskId ? o.b.taskId : o.a.taskId)} too`),
        );
      part.file.hunks.forEach((hunk, index) => {
        const mine = file.overlaps.filter(
          (o) =>
            o.kind === 'lines' &&
            ((o.a.taskId === part.taskId && o.a.hunk === index) || (o.b.taskId === part.taskId && o.b.hunk === index)),
        );
        for (const o of mine) {
          const other = o.a.taskId === part.taskId ? o.b.taskId : o.a.taskId;
          out.push(flag(`!! overlaps ${label(other)} (base lines ${o.lines.from}–${o.lines.to})`));
        }
        out.push(diffLine(hunk.header, colour), ...hunk.lines.map((line) => diffLine(line, colour)));
      });
      if (part.file.binary) out.push('(binary)');
    }
  }
  return out.join('\n') + '\n';
}
