/**
 * The task list: one keyed row per task, updated in place (only what changed is written) and
 * reordered by moving existing nodes, so 200 live tasks stay cheap. Keyboard: roving tabindex.
 */
import type { TaskSnapshot } from '../bridge/contract.js';
import { h, setText } from './dom.js';
import { compareTasks, isActive, isFinished, STATE_LABEL, taskTime } from './format.js';

interface Row {
  el: HTMLLIElement;
  badge: HTMLElement;
  label: HTMLElement;
  attempt: HTMLElement;
  time: HTMLElement;
  bar: HTMLElement;
  fill: HTMLElement;
  sub: HTMLElement;
  action: HTMLButtonElement;
  /** What the row shows now, to skip untouched rows. */
  rendered?: TaskSnapshot;
}

export interface TaskListActions {
  open(id: string): void;
  cancel(id: string): void;
  retry(id: string): void;
}

export class TaskList {
  private readonly rows = new Map<string, Row>();
  private order: string[] = [];
  private focusedId: string | undefined;
  selectedId: string | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly actions: TaskListActions,
  ) {
    root.addEventListener('keydown', (event) => this.onKey(event));
    root.addEventListener('click', (event) => {
      const target = event.target as HTMLElement;
      const row = target.closest<HTMLElement>('li.task');
      if (!row?.dataset.id) return;
      if (target.closest('button')) return;
      this.focus(row.dataset.id);
      this.actions.open(row.dataset.id);
    });
  }

  /** Brings the DOM in line with `tasks`; `changed` = ids whose snapshot changed (all when undefined). */
  render(tasks: ReadonlyMap<string, TaskSnapshot>, changed: ReadonlySet<string> | undefined, now: number): void {
    for (const [id, row] of this.rows) {
      if (!tasks.has(id)) {
        row.el.remove();
        this.rows.delete(id);
      }
    }
    for (const task of tasks.values()) {
      let row = this.rows.get(task.id);
      if (!row) {
        row = this.createRow(task.id);
        this.rows.set(task.id, row);
      }
      if (!changed || changed.has(task.id) || row.rendered !== task) this.fillRow(row, task, now);
    }
    const order = [...tasks.values()].sort(compareTasks).map((task) => task.id);
    this.reorder(order);
    if (this.focusedId === undefined || !this.rows.has(this.focusedId)) this.setRoving(order[0]);
    this.syncSelection();
  }

  /** Once a second: elapsed time of active and queued tasks. */
  tick(now: number): void {
    for (const row of this.rows.values()) {
      const task = row.rendered;
      if (task && !isFinished(task.state)) setText(row.time, taskTime(task, now));
    }
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
    const el = h('li', { class: 'task', role: 'option', tabIndex: -1, attrs: { 'data-id': id, 'aria-selected': 'false' } }, [
      h('div', { class: 'task-top' }, [badge, label, attempt, time, action]),
      bar,
      sub,
    ]);
    return { el, badge, label, attempt, time, bar, fill, sub, action };
  }

  private fillRow(row: Row, task: TaskSnapshot, now: number): void {
    const waiting = task.pendingQuestion !== undefined;
    row.el.className = `task state-${task.state}${waiting ? ' asking' : ''}`;
    setText(row.badge, waiting ? 'Needs answer' : STATE_LABEL[task.state]);
    row.badge.className = `badge badge-${waiting ? 'asking' : task.state}`;
    setText(row.label, task.label);
    row.label.title = task.label;
    setText(row.attempt, task.maxAttempts > 1 || task.attempt > 1 ? `attempt ${task.attempt}/${task.maxAttempts}` : '');
    setText(row.time, taskTime(task, now));
    row.el.setAttribute('aria-label', `${task.label}, ${STATE_LABEL[task.state]}`);

    const showBar = !isFinished(task.state);
    row.bar.hidden = !showBar;
    if (showBar) {
      const known = typeof task.progress === 'number' && isActive(task.state);
      row.bar.classList.toggle('indeterminate', isActive(task.state) && !known);
      const p = known ? Math.max(0, Math.min(100, task.progress ?? 0)) : 0;
      // CSSOM writes are allowed by the strict CSP (no style attributes in markup). The
      // indeterminate bar is animated by the stylesheet, so it must not carry an inline transform.
      row.fill.style.transform = isActive(task.state) && !known ? '' : `scaleX(${p / 100})`;
      if (known) row.bar.setAttribute('aria-valuenow', String(Math.round(p)));
      else row.bar.removeAttribute('aria-valuenow');
    }
    setText(row.sub, subline(task));
    const finished = isFinished(task.state);
    setText(row.action, finished ? 'Retry' : 'Cancel');
    row.action.setAttribute('aria-label', `${finished ? 'Retry' : 'Cancel'} ${task.label}`);
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
      default:
        return;
    }
  }
}

/** The second line of a row: what the task is doing or why it ended. */
function subline(task: TaskSnapshot): string {
  if (task.pendingQuestion) return `Asks: ${task.pendingQuestion.question}`;
  if (task.state === 'failed' || task.state === 'interrupted') return task.message ?? `Failed (${task.reason ?? 'unknown reason'})`;
  if (task.state === 'cancelled') return task.message ?? 'Cancelled';
  if (task.state === 'retrying') return task.message ? `Retrying after: ${task.message}` : 'Waiting to retry';
  if (task.state === 'queued') return 'Waiting for a free slot';
  if (task.state === 'succeeded') {
    const bits: string[] = [];
    const data = task.result?.data;
    if (data && typeof data === 'object' && typeof (data as Record<string, unknown>).summary === 'string') {
      bits.push(String((data as Record<string, unknown>).summary).slice(0, 200));
    }
    const meta = task.result?.meta;
    if (meta && typeof meta.model_used === 'string') bits.push(meta.model_used);
    const usage = meta?.token_usage;
    if (usage && typeof usage === 'object') {
      const total = (usage.total as number | undefined) ?? (usage.input ?? 0) + (usage.output ?? 0);
      if (total) bits.push(`${total} tokens`);
    }
    return bits.length ? bits.join(' · ') : 'Done';
  }
  const partial = task.lastPartial;
  if (partial && typeof partial === 'object') {
    const record = partial as Record<string, unknown>;
    for (const key of ['step', 'message', 'status', 'phase']) {
      if (typeof record[key] === 'string') return String(record[key]).slice(0, 200);
    }
  }
  return typeof task.progress === 'number' ? `${Math.round(task.progress)}%` : 'Working…';
}
