/**
 * The task list: one keyed row per task, updated in place (only what changed is written) and
 * reordered by moving existing nodes, so 200 live tasks stay cheap. Keyboard: roving tabindex.
 *
 * A coding task and its follow-ups are one thread (src/model/threads.ts): its newest run is the
 * thread's row (status, step, the thread's whole change) with a "N runs" toggle, and the earlier runs
 * are rows nested under it, shown while the thread is expanded (the toggle, or → and ← on the row).
 */
import type { TaskSnapshot } from '../bridge/contract.js';
import { h, setText } from './dom.js';
import { describeChange } from '../model/change.js';
import { describePartial, isFault } from '../model/states.js';
import { groupThreads, type Thread, type ThreadIndex } from '../model/threads.js';
import { waitingForTools } from '../model/tools.js';
import { describeSpend } from '../model/usage.js';
import { compareTasks, failureText, isActive, isFinished, modelName, STATE_LABEL, taskTime } from './format.js';
import { isReviewable } from './review.js';

interface Row {
  el: HTMLLIElement;
  badge: HTMLElement;
  label: HTMLElement;
  attempt: HTMLElement;
  worker: HTMLElement;
  time: HTMLElement;
  bar: HTMLElement;
  fill: HTMLElement;
  sub: HTMLElement;
  action: HTMLButtonElement;
  /** Marks a finished coding task for the combined review (shown on those rows only). */
  mark: HTMLInputElement;
  /** The size of the change (a coding task; on a thread, its newest run only: the thread's whole change). */
  change: HTMLElement;
  /** On a thread's newest run: shows or hides the earlier runs ("3 runs"). */
  toggle: HTMLButtonElement;
  /** On an earlier run of a thread: "run 1 of 3". */
  run: HTMLElement;
  /** The row is an earlier run of a thread (nested under the thread's newest run). */
  nested: boolean;
  /** Where the row stands in its thread as last drawn, to skip untouched rows. */
  threadKey?: string;
  /** What the row shows now, to skip untouched rows. */
  rendered?: TaskSnapshot;
  /** The newest snapshot, shown once the row scrolls into view. */
  latest?: TaskSnapshot;
}

export interface TaskListActions {
  open(id: string): void;
  cancel(id: string): void;
  retry(id: string): void;
  /** The tasks marked for review together changed (checkbox, Ctrl/Cmd-click or X on a row), in marking order. */
  marked?(ids: string[]): void;
}

/**
 * New rows built in one frame. A first screenful paints at once; a history of 1,000 tasks fills in
 * over the next frames instead of holding the first paint for all of them (docs/performance.md, the panel over a big history).
 */
const NEW_ROWS_PER_FRAME = 100;

export class TaskList {
  private readonly rows = new Map<string, Row>();
  private order: string[] = [];
  private focusedId: string | undefined;
  /** Tasks marked for the combined review, in the order they were marked. */
  private readonly marks = new Set<string>();
  /**
   * Rows known to be scrolled out of view (per IntersectionObserver): they skip the many
   * progress/time updates. Fails safe: a row the observer has not reported on yet counts as visible.
   */
  private readonly offscreen = new Set<string>();
  private readonly observer: IntersectionObserver;
  selectedId: string | undefined;
  /** Queue paused: queued rows say so. Set before `render`, with a full render when it changes. */
  paused = false;
  /** The threads as of the last render. */
  private threads: ThreadIndex<TaskSnapshot> = { threads: [], byTask: new Map() };
  /** Threads (by key) whose earlier runs show. */
  private readonly expanded = new Set<string>();
  /** The selection last made visible (its thread expanded once, so the user can collapse it again). */
  private revealed: string | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly actions: TaskListActions,
  ) {
    this.observer = new IntersectionObserver(
      (entries) => {
        const now = Date.now();
        for (const entry of entries) {
          const id = (entry.target as HTMLElement).dataset.id;
          if (!id) continue;
          if (!entry.isIntersecting) {
            this.offscreen.add(id);
            continue;
          }
          this.offscreen.delete(id);
          const row = this.rows.get(id);
          if (row?.latest && row.latest !== row.rendered) this.fillRow(row, row.latest, now);
        }
      },
      { root: root.parentElement, rootMargin: '300px 0px' },
    );
    root.addEventListener('keydown', (event) => this.onKey(event));
    // A row focused some other way (a click on its button, a script) is the keyboard's row from then on.
    root.addEventListener('focusin', (event) => {
      const id = (event.target as HTMLElement).closest<HTMLElement>('li.task')?.dataset.id;
      if (id !== undefined && id !== this.focusedId && this.rows.has(id)) this.setRoving(id);
    });
    root.addEventListener('click', (event) => {
      const target = event.target as HTMLElement;
      const row = target.closest<HTMLElement>('li.task');
      if (!row?.dataset.id) return;
      if (target.closest('button, input')) return;
      this.focus(row.dataset.id);
      if (event.ctrlKey || event.metaKey) return this.toggleMark(row.dataset.id);
      this.actions.open(row.dataset.id);
    });
  }

  /**
   * Brings the DOM in line with `tasks`; `changed` = ids whose snapshot changed (all when undefined).
   * Builds at most NEW_ROWS_PER_FRAME new rows, top of the list first: returns true when rows are
   * still missing (render again, with every task, in the next frame).
   */
  render(tasks: ReadonlyMap<string, TaskSnapshot>, changed: ReadonlySet<string> | undefined, now: number): boolean {
    for (const [id, row] of this.rows) {
      if (!tasks.has(id)) {
        this.observer.unobserve(row.el);
        row.el.remove();
        this.rows.delete(id);
        this.offscreen.delete(id);
        if (this.marks.delete(id)) this.actions.marked?.([...this.marks]);
      }
    }
    this.threads = groupThreads(tasks.values());
    const selectedThread = this.selectedId === undefined ? undefined : this.threads.byTask.get(this.selectedId);
    if (this.selectedId !== this.revealed && selectedThread) {
      if (selectedThread.head.id !== this.selectedId) this.expanded.add(selectedThread.key);
      this.revealed = this.selectedId;
    }
    const heads = this.threads.threads.map((thread) => thread.head).sort(compareTasks);
    const order: string[] = [];
    let budget = NEW_ROWS_PER_FRAME;
    let missing = false;
    const place = (task: TaskSnapshot, thread: Thread<TaskSnapshot>, expanded: boolean): void => {
      let row = this.rows.get(task.id);
      if (!row) {
        if (budget === 0) {
          missing = true;
          return;
        }
        budget -= 1;
        row = this.createRow(task.id);
        this.rows.set(task.id, row);
        this.observer.observe(row.el);
      }
      order.push(task.id);
      row.latest = task;
      this.fillThread(row, task, thread, expanded);
      if (row.rendered === task || (changed && !changed.has(task.id))) return;
      // Off-screen rows follow state changes (badge, order) but skip progress and time until they
      // scroll into view: with 200 live tasks that is most of the work saved.
      if (!this.offscreen.has(task.id) || !row.rendered || headlineChanged(row.rendered, task)) this.fillRow(row, task, now);
    };
    for (const head of heads) {
      const thread = this.threads.byTask.get(head.id)!;
      const expanded = this.expanded.has(thread.key);
      place(head, thread, expanded);
      for (const run of thread.runs) if (run !== head) place(run, thread, expanded);
    }
    for (const id of [...this.marks]) {
      const row = this.rows.get(id);
      if (row?.nested && this.marks.delete(id)) {
        row.mark.checked = false;
        this.actions.marked?.([...this.marks]);
      }
    }
    this.reorder(order);
    const focused = this.focusedId === undefined ? undefined : this.rows.get(this.focusedId);
    if (!focused) this.setRoving(order[0]);
    else if (focused.el.hidden) {
      // Its thread was collapsed: the thread's row takes the focus.
      const head = this.threads.byTask.get(this.focusedId!)?.head.id;
      if (focused.el.contains(document.activeElement)) this.focus(head ?? order[0]!);
      else this.setRoving(head ?? order[0]);
    }
    this.syncSelection();
    return missing;
  }

  /** The thread of task `id` (a thread of one for a task without follow-ups), as of the last render. */
  threadOf(id: string): Thread<TaskSnapshot> | undefined {
    return this.threads.byTask.get(id);
  }

  /** Shows or hides the earlier runs of the thread of task `id`; the list is drawn again by `redraw`. */
  private setExpanded(id: string, expanded: boolean): void {
    const thread = this.threads.byTask.get(id);
    if (!thread || thread.runs.length < 2 || this.expanded.has(thread.key) === expanded) return;
    if (expanded) this.expanded.add(thread.key);
    else this.expanded.delete(thread.key);
    for (const run of thread.runs) {
      const row = this.rows.get(run.id);
      if (row?.latest) this.fillThread(row, row.latest, thread, expanded);
    }
    // Collapsed while an earlier run had the focus: the thread's row takes it.
    if (
      !expanded &&
      this.focusedId !== undefined &&
      this.focusedId !== thread.head.id &&
      thread.runs.some((r) => r.id === this.focusedId)
    ) {
      if (this.root.contains(document.activeElement)) this.focus(thread.head.id);
      else this.setRoving(thread.head.id);
    }
  }

  /** Once a second: elapsed time of active and queued tasks. */
  tick(now: number): void {
    for (const [id, row] of this.rows) {
      const task = row.rendered;
      if (task && !isFinished(task.state) && !this.offscreen.has(id)) setText(row.time, taskTime(task, now));
    }
  }

  /** Unmarks every task (the review bar's Clear). */
  clearMarks(): void {
    if (this.marks.size === 0) return;
    for (const id of this.marks) {
      const row = this.rows.get(id);
      if (row) row.mark.checked = false;
    }
    this.marks.clear();
    this.actions.marked?.([]);
  }

  private toggleMark(id: string): void {
    const row = this.rows.get(id);
    if (!row?.rendered || !isReviewable(row.rendered) || row.nested) return;
    if (this.marks.has(id)) this.marks.delete(id);
    else this.marks.add(id);
    row.mark.checked = this.marks.has(id);
    this.actions.marked?.([...this.marks]);
  }

  focusList(): void {
    const id = this.focusedId ?? this.order[0];
    if (id) this.focus(id);
  }

  get focusedTaskId(): string | undefined {
    return this.focusedId;
  }

  private createRow(id: string): Row {
    const badge = h('span', { class: 'badge' });
    const label = h('span', { class: 'task-label' });
    const attempt = h('span', { class: 'task-attempt' });
    const worker = h('span', { class: 'task-worker' });
    const time = h('span', { class: 'task-time' });
    const fill = h('div', { class: 'progress-fill' });
    const bar = h('div', { class: 'progress', role: 'progressbar', attrs: { 'aria-valuemin': '0', 'aria-valuemax': '100' } }, [fill]);
    const sub = h('div', { class: 'task-sub' });
    const action = h('button', { class: 'row-action', tabIndex: -1, attrs: { type: 'button' } });
    action.addEventListener('click', () => {
      const task = this.rows.get(id)?.rendered;
      if (!task) return;
      if (isFinished(task.state)) this.actions.retry(id);
      else this.actions.cancel(id);
    });
    const mark = h('input', { class: 'task-mark', tabIndex: -1, hidden: true, attrs: { type: 'checkbox' } });
    mark.addEventListener('change', () => {
      if (mark.checked !== this.marks.has(id)) this.toggleMark(id);
    });
    const change = h('span', { class: 'task-change' });
    const run = h('span', { class: 'task-run', hidden: true });
    const toggle = h('button', {
      class: 'thread-toggle quiet',
      tabIndex: -1,
      hidden: true,
      attrs: { type: 'button', 'aria-expanded': 'false' },
    });
    toggle.addEventListener('click', () => {
      const thread = this.threads.byTask.get(id);
      if (thread) this.setExpanded(id, !this.expanded.has(thread.key));
    });
    const el = h('li', { class: 'task', role: 'option', tabIndex: -1, attrs: { 'data-id': id, 'aria-selected': 'false' } }, [
      h('div', { class: 'task-top' }, [mark, badge, run, label, change, toggle, attempt, worker, time, action]),
      bar,
      sub,
    ]);
    return { el, badge, label, attempt, worker, time, bar, fill, sub, action, mark, change, toggle, run, nested: false };
  }

  /**
   * Where the row stands in its thread: the thread's row (with the toggle when it has earlier runs),
   * or an earlier run, nested and shown only while the thread is expanded.
   */
  private fillThread(row: Row, task: TaskSnapshot, thread: Thread<TaskSnapshot>, expanded: boolean): void {
    const count = thread.runs.length;
    const nested = thread.head !== task;
    const index = nested ? thread.runs.indexOf(task) : count - 1;
    const key = `${count}:${index}:${nested}:${expanded}`;
    if (row.threadKey === key) return;
    row.threadKey = key;
    row.nested = nested;
    row.el.classList.toggle('thread-run', nested);
    row.el.classList.toggle('thread-head', !nested && count > 1);
    row.el.dataset.thread = count > 1 ? thread.key : '';
    row.el.hidden = nested && !expanded;
    row.run.hidden = !nested;
    setText(row.run, nested ? `run ${index + 1} of ${count}` : '');
    row.toggle.hidden = nested || count < 2;
    setText(row.toggle, count < 2 ? '' : `${count} runs`);
    row.toggle.setAttribute('aria-expanded', String(expanded));
    row.toggle.setAttribute(
      'aria-label',
      `${expanded ? 'Hide' : 'Show'} the ${count - 1} earlier run${count === 2 ? '' : 's'} of ${task.label}`,
    );
    if (row.rendered) this.fillChange(row, row.rendered);
  }

  /** The change size and the review mark: a thread's change is its newest run's (see src/model/threads.ts). */
  private fillChange(row: Row, task: TaskSnapshot): void {
    setText(row.change, task.change && !row.nested ? describeChange(task.change) : '');
    const reviewable = isReviewable(task) && !row.nested;
    if (row.mark.hidden === reviewable) row.mark.hidden = !reviewable;
  }

  private fillRow(row: Row, task: TaskSnapshot, now: number): void {
    const old = row.rendered;
    const waiting = task.pendingQuestion !== undefined;
    const wasWaiting = old?.pendingQuestion !== undefined;
    // Most updates only move progress: touch classes and labels only when they change.
    if (!old || old.state !== task.state || wasWaiting !== waiting || old.recovering !== task.recovering) {
      row.el.className = `task state-${task.state}${waiting ? ' asking' : ''}${task.recovering ? ' recovering' : ''}`;
      row.el.classList.toggle('thread-run', row.nested);
      row.el.classList.toggle('thread-head', !row.nested && !row.toggle.hidden);
      row.badge.textContent = waiting
        ? task.pendingQuestion?.approval
          ? 'Needs approval'
          : 'Needs answer'
        : task.recovering
          ? 'Recovering'
          : STATE_LABEL[task.state];
      row.badge.className = `badge badge-${waiting ? 'asking' : task.state}`;
      const finished = isFinished(task.state);
      row.action.textContent = finished ? 'Retry' : 'Cancel';
      row.action.setAttribute('aria-label', `${finished ? 'Retry' : 'Cancel'} ${task.label}`);
      row.el.setAttribute('aria-label', `${task.label}, ${STATE_LABEL[task.state]}`);
      row.bar.hidden = finished;
    }
    // The change is recorded once the agent's processes are gone: it may come after the last state.
    this.fillChange(row, task);
    if (!old || old.label !== task.label) {
      row.label.textContent = task.label;
      row.label.title = task.label;
      row.mark.setAttribute('aria-label', `Select ${task.label} to review together`);
    }
    if (!old || old.attempt !== task.attempt || old.maxAttempts !== task.maxAttempts) {
      setText(row.attempt, task.maxAttempts > 1 || task.attempt > 1 ? `attempt ${task.attempt}/${task.maxAttempts}` : '');
    }
    if (!old || old.worker !== task.worker) setText(row.worker, task.worker ? `on ${task.worker}` : '');
    setText(row.time, taskTime(task, now));

    if (!isFinished(task.state)) {
      const active = isActive(task.state);
      const known = typeof task.progress === 'number' && active;
      if (!old || old.progress !== task.progress || old.state !== task.state) {
        row.bar.classList.toggle('indeterminate', active && !known);
        const p = known ? Math.max(0, Math.min(100, task.progress ?? 0)) : 0;
        // CSSOM writes are allowed by the strict CSP (no style attributes in markup). The
        // indeterminate bar is animated by the stylesheet, so it must not carry an inline transform.
        row.fill.style.transform = active && !known ? '' : `scaleX(${p / 100})`;
        if (known) row.bar.setAttribute('aria-valuenow', String(Math.round(p)));
        else row.bar.removeAttribute('aria-valuenow');
      }
    }
    setText(row.sub, subline(task, this.paused));
    row.rendered = task;
  }

  private reorder(order: string[]): void {
    const same = order.length === this.order.length && order.every((id, i) => id === this.order[i]);
    if (same) return;
    let cursor: ChildNode | null = this.root.firstChild;
    for (const id of order) {
      const el = this.rows.get(id)?.el;
      if (!el) continue;
      if (el === cursor) cursor = cursor.nextSibling;
      else this.root.insertBefore(el, cursor);
    }
    this.order = order;
  }

  private syncSelection(): void {
    for (const [id, row] of this.rows) {
      const selected = id === this.selectedId ? 'true' : 'false';
      if (row.el.getAttribute('aria-selected') !== selected) row.el.setAttribute('aria-selected', selected);
    }
  }

  private setRoving(id: string | undefined): void {
    if (this.focusedId !== undefined) {
      const old = this.rows.get(this.focusedId);
      if (old) old.el.tabIndex = -1;
    }
    this.focusedId = id;
    const row = id === undefined ? undefined : this.rows.get(id);
    if (row) row.el.tabIndex = 0;
  }

  private focus(id: string): void {
    this.setRoving(id);
    this.rows.get(id)?.el.focus();
  }

  private onKey(event: KeyboardEvent): void {
    if ((event.target as HTMLElement).closest('button') && (event.key === 'Enter' || event.key === ' ')) return;
    const shown = this.order.filter((id) => this.rows.get(id)?.el.hidden === false);
    const index = this.focusedId === undefined ? -1 : shown.indexOf(this.focusedId);
    const move = (to: number): void => {
      const id = shown[Math.max(0, Math.min(shown.length - 1, to))];
      if (id) this.focus(id);
      event.preventDefault();
    };
    switch (event.key) {
      case 'ArrowDown':
      case 'j':
        return move(index + 1);
      case 'ArrowUp':
      case 'k':
        return move(index - 1);
      case 'Home':
        return move(0);
      case 'End':
        return move(shown.length - 1);
      case 'ArrowRight':
      case 'ArrowLeft': {
        const id = this.focusedId;
        const thread = id === undefined ? undefined : this.threads.byTask.get(id);
        if (!id || !thread || thread.runs.length < 2) return;
        event.preventDefault();
        if (event.key === 'ArrowRight') return this.setExpanded(id, true);
        // On an earlier run, ← goes to the thread's row; on that row, it hides the earlier runs.
        if (thread.head.id !== id) return this.focus(thread.head.id);
        return this.setExpanded(id, false);
      }
      case 'Enter':
      case ' ':
        if (this.focusedId) {
          this.actions.open(this.focusedId);
          event.preventDefault();
        }
        return;
      case 'c':
        if (this.focusedId) this.actions.cancel(this.focusedId);
        return;
      case 'r':
        if (this.focusedId) this.actions.retry(this.focusedId);
        return;
      case 'x':
        if (this.focusedId) this.toggleMark(this.focusedId);
        return;
      default:
        return;
    }
  }
}

/** Changes an off-screen row must still show: its state (and so its place in the list) and its name. */
function headlineChanged(before: TaskSnapshot, after: TaskSnapshot): boolean {
  return (
    before.state !== after.state ||
    (before.pendingQuestion === undefined) !== (after.pendingQuestion === undefined) ||
    before.label !== after.label ||
    before.attempt !== after.attempt
  );
}

/** The second line of a row: what the task is doing or why it ended. */
function subline(task: TaskSnapshot, paused: boolean): string {
  if (task.pendingQuestion) return `Asks: ${task.pendingQuestion.question}`;
  // Its agent outlived the hub's restart: watched until it ends, never retried meanwhile (docs/reliability.md).
  if (task.recovering && !isFinished(task.state)) return 'Recovering: its agent outlived a restart of the hub and still runs';
  const waiting = !isFinished(task.state) && waitingForTools(task.pendingToolCalls);
  if (waiting) return `W${waiting.slice(1)}`;
  if (isFault(task.state)) return failureText(task);
  if (task.state === 'cancelled') return task.message ?? 'Cancelled';
  if (task.state === 'retrying') return task.message ? `Retrying after: ${failureText(task)}` : 'Waiting to retry';
  if (task.state === 'queued') return paused ? 'Waiting: the queue is paused' : 'Waiting for a free slot';
  if (task.state === 'succeeded') {
    const bits: string[] = [];
    const data = task.result?.data;
    if (data && typeof data === 'object' && typeof (data as Record<string, unknown>).summary === 'string') {
      bits.push(String((data as Record<string, unknown>).summary).slice(0, 200));
    }
    const meta = task.result?.meta ?? task.resultSummary?.meta;
    const model = modelName(meta);
    if (model) bits.push(model);
    const usage = meta?.token_usage;
    if (usage && typeof usage === 'object') {
      const total = (usage.total as number | undefined) ?? (usage.input ?? 0) + (usage.output ?? 0);
      if (total) bits.push(`${total} tokens`);
    }
    return bits.length ? bits.join(' · ') : 'Done';
  }
  const partial = describePartial(task.lastPartial);
  // Live usage against the budget beside what it is doing, as the agent reports it ("150/200 tokens · $0.03").
  const spend = describeSpend(task.usage, task.budget);
  if (spend) return [partial || 'Working…', spend].join(' · ');
  if (partial) return partial;
  return typeof task.progress === 'number' ? `${Math.round(task.progress)}%` : 'Working…';
}
