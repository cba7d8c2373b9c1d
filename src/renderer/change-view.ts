/**
 * A coding task's change in the details pane (docs/coding-agents.md): what it changed, the diff file
 * by file (collapsible), Apply / Keep branch / Discard, and a combined review with the other ended
 * coding tasks on the same repository, hunks that touch the same or adjacent lines flagged.
 *
 * A renderer of our own over the parser the overlap check needs anyway (../model/change-overlap.ts),
 * not diff2html (1.4 MB, renders a whole diff as one HTML string) nor @pierre/diffs (shiki and its
 * WebAssembly, which the panel's CSP does not allow): every line goes in as text (agent output,
 * never markup), and a big diff paints fast because a file's lines are built only when it is open,
 * LINES_PER_CHUNK at a time.
 */
import type { ApplyOutcome, TaskChange, TaskSnapshot } from '../bridge/contract.js';
import { combineChanges, parseUnifiedDiff, type CombinedView, type FileDiff, type Overlap } from '../model/change-overlap.js';
import { describeChange } from '../model/change.js';
import { isFinished } from '../model/task.js';
import { h } from './dom.js';

export interface ChangeActions {
  loadChange(id: string): Promise<TaskChange>;
  apply(ids: string[]): Promise<ApplyOutcome>;
  keepBranch(id: string): Promise<void>;
  discard(id: string): Promise<void>;
  /** Every task the panel knows (for the combined review's list of tasks on the same repository). */
  tasks(): TaskSnapshot[];
}

/** Lines of one file built at a time; "Show more" builds the next ones. */
export const LINES_PER_CHUNK = 400;
/** Files are open at first until this many of their lines are shown; the rest start closed. */
const OPEN_LINES_BUDGET = 800;

export class ChangeSection {
  readonly root = h('section', { class: 'section change', attrs: { 'aria-label': 'Change' }, hidden: true });
  private key = '';
  private loadedFor: string | undefined;

  constructor(private readonly actions: ChangeActions) {}

  show(task: TaskSnapshot): void {
    const key = `${task.id}:${task.state}:${task.change ? 'change' : task.worktree ? 'worktree' : ''}`;
    if (key === this.key) return;
    this.key = key;
    this.root.hidden = !task.worktree && !task.change;
    if (this.root.hidden) return;
    const head = h('div', { class: 'section-head' }, [h('h3', { text: 'Change' })]);
    const where = task.change ?? task.worktree!;
    const facts = h('p', { class: 'change-facts' }, [
      `Branch ${where.branch} from ${where.base} (${where.baseSha.slice(0, 8)}) · `,
      task.change ? describeChange(task.change) : 'working…',
      task.change && task.change.commits.length > 0 ? ` · ${task.change.commits.length} commit(s)` : '',
      // A follow-up continues the thread of its parent, in the same worktree.
      task.parent ? ` · follow-up of ${this.actions.tasks().find((t) => t.id === task.parent)?.label ?? task.parent}` : '',
    ]);
    this.root.replaceChildren(head, facts);
    if (!task.change || !isFinished(task.state)) return;
    const status = h('p', { class: 'change-status', role: 'status' });
    const diff = h('div', { class: 'diff', attrs: { 'aria-label': 'Diff' } });
    const button = (text: string, action: string, run: () => Promise<string>, className = '') =>
      h('button', {
        text,
        class: className,
        attrs: { type: 'button', 'data-action': action },
        on: {
          click: () => {
            status.textContent = '…';
            run().then(
              (message) => (status.textContent = message),
              (error: unknown) => (status.textContent = (error as Error).message),
            );
          },
        },
      });
    head.append(
      h('div', { class: 'details-buttons' }, [
        button('Apply', 'apply', async () => applied(await this.actions.apply([task.id])), 'primary'),
        button('Keep branch', 'keep-branch', async () => {
          await this.actions.keepBranch(task.id);
          return `Worktree removed; branch ${where.branch} kept`;
        }),
        button(
          'Discard',
          'discard',
          async () => {
            await this.actions.discard(task.id);
            diff.replaceChildren();
            return 'Discarded: worktree and branch removed';
          },
          'danger',
        ),
      ]),
    );
    this.root.append(status, this.review(task, status, diff), diff);
    if (this.loadedFor === task.id && diff.childElementCount > 0) return;
    this.loadedFor = task.id;
    diff.append(h('p', { class: 'muted', text: 'Loading the diff…' }));
    this.actions.loadChange(task.id).then(
      (change) => diff.replaceChildren(renderDiff(change.diff)),
      (error: unknown) => diff.replaceChildren(h('p', { class: 'muted', text: (error as Error).message })),
    );
  }

  /** The other ended coding tasks on the same repository, to review (and apply) together with this one. */
  private review(task: TaskSnapshot, status: HTMLElement, diff: HTMLElement): HTMLElement {
    const others = this.actions
      .tasks()
      .filter((t) => t.id !== task.id && t.change && t.change.repo === task.change!.repo && isFinished(t.state));
    if (others.length === 0) return h('span', { hidden: true });
    const order: string[] = [task.id];
    const marks = new Map<string, HTMLElement>();
    const renumber = () => {
      for (const [id, mark] of marks) mark.textContent = order.includes(id) ? `#${order.indexOf(id) + 1}` : '';
    };
    const rows = others.map((other) => {
      const mark = h('span', { class: 'order' });
      marks.set(other.id, mark);
      const box = h('input', { attrs: { type: 'checkbox', 'aria-label': `Review with ${other.label}`, 'data-task': other.id } });
      box.addEventListener('change', () => {
        if (box.checked) order.push(other.id);
        else order.splice(order.indexOf(other.id), 1);
        renumber();
      });
      return h('label', { class: 'review-row' }, [box, mark, ` ${other.label} — ${describeChange(other.change!)}`]);
    });
    const together = h('button', {
      text: 'Review together',
      attrs: { type: 'button', 'data-action': 'review-together' },
      on: {
        click: () => {
          Promise.all(order.map((id) => this.actions.loadChange(id))).then(
            (changes) => {
              const labels = new Map(order.map((id, i) => [id, `#${i + 1}`]));
              diff.replaceChildren(renderCombined(combineChanges(changes.map((c) => ({ taskId: c.record.taskId, diff: c.diff }))), labels));
            },
            (error: unknown) => (status.textContent = (error as Error).message),
          );
        },
      },
    });
    const applyAll = h('button', {
      text: 'Apply in this order',
      attrs: { type: 'button', 'data-action': 'apply-order' },
      on: {
        click: () => {
          this.actions.apply([...order]).then(
            (outcome) => (status.textContent = applied(outcome)),
            (error: unknown) => (status.textContent = (error as Error).message),
          );
        },
      },
    });
    return h('details', { class: 'review' }, [
      h('summary', { text: `Review with other tasks on this repository (${others.length})` }),
      ...rows,
      h('div', { class: 'details-buttons' }, [together, applyAll]),
    ]);
  }
}

function applied(outcome: ApplyOutcome): string {
  if (!outcome.ok) return outcome.message;
  return `Applied ${outcome.applied.length} change(s) to the checkout: ${outcome.files.join(', ')}`;
}

/** A unified diff as collapsible files; big files build their lines in chunks as they are opened and scrolled. */
export function renderDiff(diff: string): HTMLElement {
  const files = parseUnifiedDiff(diff);
  if (files.length === 0) return h('p', { class: 'muted', text: 'No change.' });
  let budget = OPEN_LINES_BUDGET;
  return h(
    'div',
    { class: 'diff-files' },
    files.map((file) => {
      const lines = file.hunks.reduce((n, hunk) => n + hunk.lines.length + 1, 0);
      const open = budget > 0;
      budget -= lines;
      return fileView(file, `${file.path} (${file.status})`, open, []);
    }),
  );
}

/** Several tasks' changes file by file, each task's hunks in turn, overlapping hunks flagged. */
export function renderCombined(view: CombinedView, labels: Map<string, string>): HTMLElement {
  const label = (id: string) => labels.get(id) ?? id;
  const files = new Set(view.overlaps.map((o) => o.path));
  const summary = h('p', {
    class: view.overlaps.length ? 'overlap-summary flagged' : 'overlap-summary',
    text: view.overlaps.length
      ? `${view.overlaps.length} overlap(s) in ${files.size} file(s): ${[...files].join(', ')}`
      : 'No two tasks touch the same or adjacent lines.',
  });
  return h('div', { class: 'diff-files combined' }, [
    summary,
    ...view.files.flatMap((file) =>
      file.parts.map((part) =>
        fileView(
          part.file,
          `${file.path} — ${label(part.taskId)} (${part.file.status})`,
          file.overlaps.length > 0,
          file.overlaps
            .filter((o) => o.a.taskId === part.taskId || o.b.taskId === part.taskId)
            .map((o) => ({ o, mine: part.taskId, label })),
        ),
      ),
    ),
  ]);
}

interface Flag {
  o: Overlap;
  mine: string;
  label: (id: string) => string;
}

function fileView(file: FileDiff, title: string, open: boolean, flags: Flag[]): HTMLElement {
  const insertions = file.hunks.reduce((n, hunk) => n + hunk.lines.filter((l) => l.startsWith('+')).length, 0);
  const deletions = file.hunks.reduce((n, hunk) => n + hunk.lines.filter((l) => l.startsWith('-')).length, 0);
  const body = h('div', { class: 'diff-body' });
  const details = h('details', { class: flags.length ? 'diff-file flagged' : 'diff-file', attrs: { 'data-path': file.path } }, [
    h('summary', {}, [
      h('span', { class: 'diff-path', text: title }),
      h('span', { class: 'diff-counts', text: file.binary ? 'binary' : ` +${insertions} −${deletions}` }),
    ]),
    body,
  ]);
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    body.append(...linesOf(file, flags));
  };
  details.addEventListener('toggle', () => details.open && build());
  if (open) {
    details.open = true;
    build();
  }
  return details;
}

/** The rows of a file, LINES_PER_CHUNK at a time behind a "Show more" button. */
function linesOf(file: FileDiff, flags: Flag[]): HTMLElement[] {
  const rows: Array<() => HTMLElement> = [];
  if (file.binary) rows.push(() => h('div', { class: 'diff-line meta', text: 'Binary file' }));
  file.hunks.forEach((hunk, index) => {
    for (const flag of flags) {
      const { o } = flag;
      const mineAt = o.a.taskId === flag.mine ? o.a.hunk : o.b.hunk;
      if (o.kind === 'file' ? index === 0 : mineAt === index) {
        const other = flag.label(o.a.taskId === flag.mine ? o.b.taskId : o.a.taskId);
        const text =
          o.kind === 'file' ? `Overlaps ${other}: the whole file` : `Overlaps ${other} (base lines ${o.lines.from}–${o.lines.to})`;
        rows.push(() => h('div', { class: 'diff-flag', role: 'note', text }));
      }
    }
    rows.push(() => h('div', { class: 'diff-line hunk', text: hunk.header }));
    for (const line of hunk.lines) {
      const kind = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'ctx';
      rows.push(() => h('div', { class: `diff-line ${kind}`, text: line }));
    }
  });
  const chunk = (from: number): HTMLElement[] => {
    const out = rows.slice(from, from + LINES_PER_CHUNK).map((make) => make());
    const rest = rows.length - from - LINES_PER_CHUNK;
    if (rest > 0) {
      const more = h('button', {
        text: `Show ${Math.min(rest, LINES_PER_CHUNK)} more lines (${rest} left)`,
        class: 'quiet diff-more',
        attrs: { type: 'button' },
      });
      more.addEventListener('click', () => more.replaceWith(...chunk(from + LINES_PER_CHUNK)));
      out.push(more);
    }
    return out;
  };
  return chunk(0);
}
