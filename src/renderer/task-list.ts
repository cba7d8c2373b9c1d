/**
 * The task list: one keyed row per task, updated in place (only what changed is written) and
 * reordered by moving existing nodes, so 200 live tasks stay cheap. Keyboard: roving tabindex.
 */
import type { TaskSnapshot } from '../bridge/contract.js';
import { h, setText } from './dom.js';
import { describePartial, isFault } from '../model/states.js';
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
 * over the next frames instead of holding the first paint for all of them (issue 22).
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
    const sorted = [...tasks.values()].sort(compareTasks);
    const order: string[] = [];
    let budget = NEW_ROWS_PER_FRAME;
    let missing = false;
    for (const task of sorted) {
      let row = this.rows.get(task.id);
      if (!row) {
        if (budget === 0) {
          missing = true;
          continue;
        }
        budget -= 1;
        row = this.createRow(task.id);
        this.rows.set(task.id, row);
        this.observer.observe(row.el);
      }
      order.push(task.id);
      row.latest = task;
      if (row.rendered === task || (changed && !changed.has(task.id))) continue;
      // Off-screen rows follow state changes (badge, order) but skip progress and time until they
      // scroll into view: with 200 live tasks that is most of the work saved.
      if (!this.offscreen.has(task.id) || !row.rendered || headlineChanged(row.rendered, task)) this.fillRow(row, task, now);
    }
    this.reorder(order);
    if (this.focusedId === undefined || !this.rows.has(this.focusedId)) this.setRoving(order[0]);
    this.syncSelection();
    return missing;
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
    if (!row?.rendered || !isReviewable(row.rendered)) return;
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
    const el = h('li', { class: 'task', role: 'option', tabIndex: -1, attrs: { 'data-id': id, 'aria-selected': 'false' } }, [
      h('div', { class: 'task-top' }, [mark, badge, label, attempt, worker, time, action]),
      bar,
      sub,
    ]);
    return { el, badge, label, attempt, worker, time, bar, fill, sub, action, mark };
  }

  private fillRow(row: Row, task: TaskSnapshot, now: number): void {
    const old = row.rendered;
    const waiting = task.pendingQuestion !== undefined;
    const wasWaiting = old?.pendingQuestion !== undefined;
    // Most updates only move progress: touch classes and labels only when they change.
    if (!old || old.state !== task.state || wasWaiting !== waiting) {
      row.el.className = `task state-${task.state}${waiting ? ' asking' : ''}`;
      row.badge.textContent = waiting ? 'Needs answer' : STATE_LABEL[task.state];
      row.badge.className = `badge badge-${waiting ? 'asking' : task.state}`;
      const finished = isFinished(task.state);
      row.action.textContent = finished ? 'Retry' : 'Cancel';
      row.action.setAttribute('aria-label', `${finished ? 'Retry' : 'Cancel'} ${task.label}`);
      row.el.setAttribute('aria-label', `${task.label}, ${STATE_LABEL[task.state]}`);
      row.bar.hidden = finished;
    }
    // The change is recorded once the agent's processes are gone: it may come after the last state.
    const reviewable = isReviewable(task);
    if (row.mark.hidden === reviewable) row.mark.hidden = !reviewable;
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
    const index = this.focusedId === undefined ? -1 : this.order.indexOf(this.focusedId);
    const move = (to: number): void => {
      const id = this.order[Math.max(0, Math.min(this.order.length - 1, to))];
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
        return move(this.order.length - 1);
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
  if (partial) return partial;
  return typeof task.progress === 'number' ? `${Math.round(task.progress)}%` : 'Working…';
}
