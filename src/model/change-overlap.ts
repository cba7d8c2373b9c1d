/**
 * Several coding tasks' changes on one repository, reviewed together (docs/coding-agents.md): the
 * unified diffs are parsed, grouped by file, and every place where two tasks changed the same or
 * adjacent lines of the base is flagged — before anything is applied. Pure: no git, no I/O.
 *
 * A hunk's changed lines are measured on the base (the `-` side), context left out: a run of removed
 * lines covers those lines; lines only added sit between two base lines (after line k: k + ½). Two
 * runs of different tasks overlap when they are less than ADJACENT_LINES apart, the distance git's
 * merge needs to keep two edits apart as well.
 */

/** Runs this close (in base lines) or closer are flagged: the same lines, or the line next to them. */
export const ADJACENT_LINES = 1;

export interface DiffHunk {
  /** `@@ -a,b +c,d @@ …` as in the diff. */
  header: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** The hunk's lines with their ' ', '+', '-' or '\\' prefix. */
  lines: string[];
}

export interface FileDiff {
  /** The file's path (the new one; the old one for a deletion). */
  path: string;
  status: 'added' | 'deleted' | 'modified';
  binary: boolean;
  /** `diff --git …` up to the first hunk, as in the diff. */
  headerLines: string[];
  hunks: DiffHunk[];
}

/** Splits a `git diff` into files and hunks. */
export function parseUnifiedDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  let file: FileDiff | undefined;
  let hunk: DiffHunk | undefined;
  const lines = diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const line of lines) {
    if (line.startsWith('diff --git ')) {
      file = { path: pathOfHeader(line), status: 'modified', binary: false, headerLines: [line], hunks: [] };
      hunk = undefined;
      files.push(file);
      continue;
    }
    if (!file) continue;
    const range = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (range) {
      hunk = {
        header: line,
        oldStart: Number(range[1]),
        oldLines: range[2] === undefined ? 1 : Number(range[2]),
        newStart: Number(range[3]),
        newLines: range[4] === undefined ? 1 : Number(range[4]),
        lines: [],
      };
      file.hunks.push(hunk);
      continue;
    }
    if (hunk) {
      hunk.lines.push(line);
      continue;
    }
    file.headerLines.push(line);
    if (line.startsWith('new file mode')) file.status = 'added';
    else if (line.startsWith('deleted file mode')) file.status = 'deleted';
    else if (line.startsWith('GIT binary patch') || /^Binary files .* differ$/.test(line)) file.binary = true;
    else if (line.startsWith('+++ b/')) file.path = unquote(line.slice(6));
    else if (line.startsWith('--- a/') && file.status === 'deleted') file.path = unquote(line.slice(6));
  }
  return files;
}

/** A run of changed lines on the base: [from, to] (from = to = k + ½ for lines added after line k). */
export interface ChangedRun {
  from: number;
  to: number;
}

/** The runs of changed lines of a hunk, on the base's line numbers. */
export function changedRuns(hunk: DiffHunk): ChangedRun[] {
  const runs: ChangedRun[] = [];
  // `-5,0` (nothing removed) means "after line 5": the hunk's first line would be line 6.
  let oldLine = hunk.oldLines === 0 ? hunk.oldStart + 1 : hunk.oldStart;
  let start: number | undefined;
  const close = (): void => {
    if (start === undefined) return;
    runs.push(oldLine > start ? { from: start, to: oldLine - 1 } : { from: start - 0.5, to: start - 0.5 });
    start = undefined;
  };
  for (const line of hunk.lines) {
    const kind = line.charAt(0);
    if (kind === '-') {
      start ??= oldLine;
      oldLine += 1;
    } else if (kind === '+') {
      start ??= oldLine;
    } else if (kind !== '\\') {
      close();
      oldLine += 1;
    }
  }
  close();
  return runs;
}

/** Two tasks' hunks that touch the same or adjacent base lines of one file. */
export interface Overlap {
  path: string;
  a: { taskId: string; hunk: number };
  b: { taskId: string; hunk: number };
  /** The base lines involved (rounded out to whole lines). */
  lines: { from: number; to: number };
  /** 'lines' for hunks; 'file' when one task adds, deletes or binary-changes a file the other changed too. */
  kind: 'lines' | 'file';
}

export interface CombinedFile {
  path: string;
  /** Each task's part of this file, in the order the tasks were given. */
  parts: Array<{ taskId: string; file: FileDiff }>;
  overlaps: Overlap[];
}

export interface CombinedView {
  files: CombinedFile[];
  /** Every overlap, file by file. */
  overlaps: Overlap[];
}

/** Several tasks' diffs as one view by file, with the overlaps between them flagged. */
export function combineChanges(changes: ReadonlyArray<{ taskId: string; diff: string }>): CombinedView {
  const byPath = new Map<string, CombinedFile>();
  for (const { taskId, diff } of changes) {
    for (const file of parseUnifiedDiff(diff)) {
      let entry = byPath.get(file.path);
      if (!entry) byPath.set(file.path, (entry = { path: file.path, parts: [], overlaps: [] }));
      entry.parts.push({ taskId, file });
    }
  }
  const files = [...byPath.values()].sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  for (const entry of files) {
    for (let i = 0; i < entry.parts.length; i++) {
      for (let j = i + 1; j < entry.parts.length; j++) entry.overlaps.push(...overlapsOf(entry.path, entry.parts[i]!, entry.parts[j]!));
    }
  }
  return { files, overlaps: files.flatMap((entry) => entry.overlaps) };
}

function overlapsOf(path: string, x: { taskId: string; file: FileDiff }, y: { taskId: string; file: FileDiff }): Overlap[] {
  const whole = (part: { file: FileDiff }) => part.file.status !== 'modified' || part.file.binary;
  if (whole(x) || whole(y)) {
    return [{ path, a: { taskId: x.taskId, hunk: 0 }, b: { taskId: y.taskId, hunk: 0 }, lines: { from: 0, to: 0 }, kind: 'file' }];
  }
  const found: Overlap[] = [];
  x.file.hunks.forEach((hx, ix) => {
    y.file.hunks.forEach((hy, iy) => {
      for (const rx of changedRuns(hx)) {
        for (const ry of changedRuns(hy)) {
          const gap = Math.max(rx.from, ry.from) - Math.min(rx.to, ry.to);
          if (gap > ADJACENT_LINES) continue;
          const lines = { from: Math.max(1, Math.floor(Math.min(rx.from, ry.from))), to: Math.ceil(Math.max(rx.to, ry.to)) };
          found.push({ path, a: { taskId: x.taskId, hunk: ix }, b: { taskId: y.taskId, hunk: iy }, lines, kind: 'lines' });
          return;
        }
      }
    });
  });
  return found;
}

function pathOfHeader(line: string): string {
  const match = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
  return match ? unquote(match[2]!) : line.slice('diff --git '.length);
}

/** git quotes paths with unusual characters ("a\\tb"); the common escapes are undone. */
function unquote(text: string): string {
  if (!text.startsWith('"') || !text.endsWith('"')) return text;
  return text.slice(1, -1).replace(/\\(["\\tn])/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : c));
}
