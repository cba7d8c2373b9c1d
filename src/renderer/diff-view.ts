/**
 * A unified diff as the panel shows it (docs/coding-agents.md, "Review in the panel"): file by file,
 * each a native <details> (collapsible by mouse and keyboard), with the lines of the base and of the
 * change numbered. Written for the panel's strict CSP — text goes in through `textContent`, styles
 * come from panel.css only, no inline style or script — and for big diffs: a file's lines are built
 * only once it is opened, LINES_PER_CHUNK at a time, and only the first files that fit OPEN_LINES
 * start open, so a 5,000-line diff paints as headers plus a screenful of lines. Of those, only the
 * first file is built for the first frame; the others open below it are built once it has painted.
 *
 * The diff is parsed by the task model's `parseUnifiedDiff` (the one the combined review uses), so
 * what is shown and what is flagged as overlapping come from the same hunks.
 */
import type { DiffHunk, FileDiff } from '../model/change-overlap.js';
import { h } from './dom.js';

/** Lines built when a file opens, and on each "Show more": a long hunk never builds at once. */
export const LINES_PER_CHUNK = 400;
/** Files start open while their lines add up to at most this (the first file always does). */
export const OPEN_LINES = 400;

/** One task's part of a file (a single diff has one part; the combined review one per task). */
export interface FilePart {
  file: FileDiff;
  /** Whose change this is, shown above the part in a combined view. */
  owner?: string;
  /** Notes for hunks (by index), e.g. "Overlaps with Task B (lines 4–6)": the hunk is flagged. */
  flags?: ReadonlyMap<number, string>;
}

export interface DiffViewFile {
  path: string;
  parts: FilePart[];
  /** The file as a whole is flagged (two tasks touched it, see the flags of its hunks). */
  flagged?: boolean;
}

/** One row of a file body: a hunk's header or one of its lines. */
type Row =
  | { kind: 'part'; owner: string }
  | { kind: 'hunk'; text: string; flag?: string }
  | { kind: 'line'; sign: string; text: string; oldLine?: number; newLine?: number; flagged: boolean };

/** The files of one parsed diff, as `diffView` takes them. */
export function singleDiffFiles(files: FileDiff[]): DiffViewFile[] {
  return files.map((file) => ({ path: file.path, parts: [{ file }] }));
}

/** The diff view: a toolbar (expand/collapse all) and one collapsible block per file. */
export function diffView(files: DiffViewFile[], options: { label?: string } = {}): HTMLElement {
  const blocks: FileBlock[] = [];
  let budget = OPEN_LINES;
  for (const [i, file] of files.entries()) {
    const lines = file.parts.reduce((sum, part) => sum + lineCount(part.file), 0);
    const open = i === 0 || lines <= budget;
    if (open) budget -= lines;
    if (budget < 0) budget = 0;
    blocks.push(new FileBlock(file, open, i === 0));
  }
  const expand = h('button', { text: 'Expand all', class: 'quiet', attrs: { type: 'button' } });
  expand.addEventListener('click', () => blocks.forEach((block) => block.setOpen(true)));
  const collapse = h('button', { text: 'Collapse all', class: 'quiet', attrs: { type: 'button' } });
  collapse.addEventListener('click', () => blocks.forEach((block) => block.setOpen(false)));
  const totals = files.reduce(
    (sum, file) => {
      for (const part of file.parts) {
        const figures = partFigures(part.file);
        sum.insertions += figures.insertions;
        sum.deletions += figures.deletions;
      }
      return sum;
    },
    { insertions: 0, deletions: 0 },
  );
  const count = `${files.length} file${files.length === 1 ? '' : 's'}, +${totals.insertions} −${totals.deletions}`;
  return h('div', { class: 'diff-view', attrs: { 'aria-label': options.label ?? 'Diff' }, role: 'region' }, [
    h('div', { class: 'diff-toolbar' }, [h('span', { class: 'diff-count', text: count }), expand, collapse]),
    files.length === 0 ? h('p', { class: 'diff-empty', text: 'No changes.' }) : null,
    ...blocks.map((block) => block.el),
  ]);
}

/** One file: its summary line always, its lines once opened (then kept). */
class FileBlock {
  readonly el: HTMLDetailsElement;
  private readonly body = h('div', { class: 'diff-body' });
  private rows: Row[] | undefined;
  private shown = 0;
  private more: HTMLButtonElement | undefined;
  /** Open, and built after the first paint (not by the toggle event that opening queues). */
  private deferred = false;

  constructor(
    private readonly file: DiffViewFile,
    open: boolean,
    /** Build now, for the first frame; else, when open, after it has painted. */
    now: boolean,
  ) {
    const status = file.parts.map((part) => part.file.status).find((s) => s !== 'modified') ?? 'modified';
    const figures = file.parts.map((part) => partFigures(part.file));
    const insertions = figures.reduce((sum, f) => sum + f.insertions, 0);
    const deletions = figures.reduce((sum, f) => sum + f.deletions, 0);
    const summary = h('summary', { class: 'diff-file-head' }, [
      h('span', { class: `diff-status diff-status-${status}`, text: status }),
      h('span', { class: 'diff-path', text: file.path }),
      file.flagged ? h('span', { class: 'diff-overlap-chip', text: 'overlap' }) : null,
      h('span', { class: 'diff-figures' }, [
        h('span', { class: 'diff-ins', text: `+${insertions}` }),
        ' ',
        h('span', { class: 'diff-del', text: `−${deletions}` }),
      ]),
    ]);
    this.el = h('details', { class: `diff-file${file.flagged ? ' flagged' : ''}`, attrs: { 'data-path': file.path } }, [
      summary,
      this.body,
    ]);
    this.el.addEventListener('toggle', () => {
      if (this.el.open && !this.deferred) this.build();
    });
    if (open && now) this.setOpen(true);
    else if (open) {
      this.el.open = true;
      this.deferred = true;
      afterPaint(() => {
        this.deferred = false;
        if (this.el.open) this.build();
      });
    }
  }

  setOpen(open: boolean): void {
    if (this.el.open === open) return;
    this.el.open = open;
    // The toggle event comes later (a task); the first chunk is built now, for the same frame.
    if (open) this.build();
  }

  private build(): void {
    if (this.rows) return;
    this.rows = rowsOf(this.file);
    if (this.rows.length === 0) {
      const binary = this.file.parts.some((part) => part.file.binary);
      this.body.append(
        h('p', { class: 'diff-note', text: binary ? 'Binary file: not shown.' : 'No line changes (mode or an empty file).' }),
      );
      return;
    }
    this.showMore();
  }

  /** Builds the next LINES_PER_CHUNK lines (with their hunk headers) into one fragment, and "Show more" when lines remain. */
  private showMore(): void {
    const rows = this.rows!;
    const fragment = document.createDocumentFragment();
    let lines = 0;
    let i = this.shown;
    for (; i < rows.length && lines < LINES_PER_CHUNK; i++) {
      if (rows[i]!.kind === 'line') lines += 1;
      fragment.append(rowElement(rows[i]!));
    }
    this.shown = i;
    this.more?.remove();
    this.more = undefined;
    this.body.append(fragment);
    const left = rows.slice(i).filter((row) => row.kind === 'line').length;
    if (left > 0) {
      this.more = h('button', {
        text: `Show ${Math.min(left, LINES_PER_CHUNK)} more lines (${left} left)`,
        class: 'diff-more quiet',
        attrs: { type: 'button' },
      });
      this.more.addEventListener('click', () => this.showMore());
      this.body.append(this.more);
    }
  }
}

/** Calls `fn` once the next frame has been painted (at once while the page is hidden: no frames then). */
function afterPaint(fn: () => void): void {
  if (document.hidden) return void setTimeout(fn, 0);
  requestAnimationFrame(() => setTimeout(fn, 0));
}

function rowsOf(file: DiffViewFile): Row[] {
  const rows: Row[] = [];
  const combined = file.parts.length > 1 || file.parts.some((part) => part.owner !== undefined);
  for (const part of file.parts) {
    if (combined) rows.push({ kind: 'part', owner: part.owner ?? '' });
    part.file.hunks.forEach((hunk, index) => {
      const flag = part.flags?.get(index);
      rows.push({ kind: 'hunk', text: hunk.header, flag });
      pushLines(rows, hunk, flag !== undefined);
    });
  }
  return rows;
}

function pushLines(rows: Row[], hunk: DiffHunk, flagged: boolean): void {
  let oldLine = hunk.oldStart;
  let newLine = hunk.newStart;
  for (const line of hunk.lines) {
    const sign = line.charAt(0);
    const text = line.slice(1);
    if (sign === '+') rows.push({ kind: 'line', sign, text, newLine: newLine++, flagged });
    else if (sign === '-') rows.push({ kind: 'line', sign, text, oldLine: oldLine++, flagged });
    else if (sign === '\\') rows.push({ kind: 'line', sign, text: line, flagged });
    else rows.push({ kind: 'line', sign: ' ', text, oldLine: oldLine++, newLine: newLine++, flagged });
  }
}

const LINE_CLASS: Record<string, string> = { '+': 'dl dl-add', '-': 'dl dl-del', ' ': 'dl', '\\': 'dl dl-note' };

/**
 * One element per line: the numbers are a data attribute drawn by the stylesheet (`::before`), so a
 * line costs one element and one text node, and copying the code leaves the numbers behind.
 */
function rowElement(row: Row): HTMLElement {
  if (row.kind === 'part') return h('div', { class: 'diff-part', text: row.owner });
  if (row.kind === 'hunk') {
    return h('div', { class: `diff-hunk${row.flag ? ' flagged' : ''}` }, [
      h('span', { class: 'diff-hunk-range', text: row.text }),
      row.flag ? h('span', { class: 'diff-flag', role: 'note', text: row.flag }) : null,
    ]);
  }
  const el = document.createElement('div');
  el.className = row.flagged ? `${LINE_CLASS[row.sign]!} flagged` : LINE_CLASS[row.sign]!;
  el.dataset.g = `${pad(row.oldLine)} ${pad(row.newLine)} ${row.sign === '\\' ? ' ' : row.sign}`;
  el.textContent = row.text;
  return el;
}

function pad(line: number | undefined): string {
  return (line === undefined ? '' : String(line)).padStart(5);
}

function lineCount(file: FileDiff): number {
  return file.hunks.reduce((sum, hunk) => sum + hunk.lines.length + 1, 0);
}

function partFigures(file: FileDiff): { insertions: number; deletions: number } {
  let insertions = 0;
  let deletions = 0;
  for (const hunk of file.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith('+')) insertions += 1;
      else if (line.startsWith('-')) deletions += 1;
    }
  }
  return { insertions, deletions };
}
