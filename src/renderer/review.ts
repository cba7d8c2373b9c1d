/**
 * Reviewing coding tasks' changes in the panel (docs/coding-agents.md, "Review in the panel"): the
 * details pane's Change section (the diff, Apply, Keep branch, Discard) and the combined review of
 * several finished tasks on one repository (their changes by file, the hunks where two touched the
 * same or adjacent lines flagged, applied in the order the user picks: all or none).
 *
 * Every action is one bridge call; what a change is and whether it applies is the broker's word
 * (`TaskChange.record.state`, `ApplyOutcome`), never inferred here from message text.
 */
import type { ApplyOutcome, BackchannelBridge, TaskChange, TaskSnapshot } from '../bridge/contract.js';
import { BridgeError } from '../model/errors.js';
import { combineChanges, parseUnifiedDiff, type CombinedView } from '../model/change-overlap.js';
import { describeChange, type ChangeState } from '../model/change.js';
import { diffView, singleDiffFiles, type DiffViewFile, type FilePart } from './diff-view.js';
import { h } from './dom.js';
import { isFinished } from './format.js';
import type { ThreadOf } from './threads.js';

/** The User Timing measure of building a task's diff view (one entry per build). */
export const DIFF_MEASURE = 'backchannel:diff';

export type ChangeCalls = Pick<BackchannelBridge, 'taskChange' | 'applyChanges' | 'discardChange' | 'keepBranch'>;

export interface ReviewNotices {
  toast(message: string): void;
  error(error: unknown): void;
}

/** A finished coding task with a recorded change: it can be reviewed, alone or with others. */
export function isReviewable(task: TaskSnapshot): boolean {
  return task.change !== undefined && isFinished(task.state);
}

const STATE_TEXT: Record<ChangeState, string> = {
  working: 'The agent is still working in its worktree.',
  ready: 'Ready: nothing of it is in your checkout yet.',
  applied: 'Applied to your checkout.',
  kept: 'Worktree removed, branch kept.',
  discarded: 'Discarded: its worktree and branch are gone.',
};

/** How long a change asked for ahead (ChangeStore.prefetch) is taken as it is. */
const PREFETCH_FRESH_MS = 10_000;

/** What the panel knows of a task's change: fetched once, then as the broker answered each action. */
type Known = { state: 'loading' } | { state: 'loaded'; change: TaskChange } | { state: 'gone' } | { state: 'error'; message: string };

/**
 * The changes fetched so far, shared by the details pane and the combined review, so an action in
 * one shows in the other. `changed` is called with the task id whenever what is known changes.
 */
export class ChangeStore {
  private readonly known = new Map<string, Known>();
  private readonly listeners = new Set<(id: string) => void>();
  /** Answers asked for before the task was known (`prefetch`), with when they were asked for. */
  private readonly early = new Map<string, { at: number; answer: Promise<TaskChange | undefined> }>();

  constructor(readonly calls: ChangeCalls) {}

  /**
   * Asks for the change of `id` now, before the task itself is known: the panel opened on a task by
   * its link asks for the task and its change together instead of one after the other. The answer
   * is only kept for `load`, which takes it when it is fresh (PREFETCH_FRESH_MS) and a finished
   * change; anything else (no change, still working, an error) is asked for again.
   */
  prefetch(id: string): void {
    if (this.known.has(id) || this.early.has(id)) return;
    const answer = this.calls.taskChange(id).then(
      (change) => change,
      () => undefined,
    );
    this.early.set(id, { at: Date.now(), answer });
  }

  on(listener: (id: string) => void): void {
    this.listeners.add(listener);
  }

  get(id: string): Known | undefined {
    return this.known.get(id);
  }

  /** Fetches the change of `id` unless it is known (or `again`). */
  load(id: string, again = false): Promise<TaskChange | undefined> {
    const known = this.known.get(id);
    if (!again && known && known.state !== 'error') return Promise.resolve(known.state === 'loaded' ? known.change : undefined);
    const early = this.early.get(id);
    this.early.delete(id);
    this.set(id, { state: 'loading' });
    const fresh = !again && early !== undefined && Date.now() - early.at < PREFETCH_FRESH_MS;
    const answer = fresh
      ? early.answer.then((change) => (change && change.record.state !== 'working' ? change : this.calls.taskChange(id)))
      : this.calls.taskChange(id);
    return answer.then(
      (change) => {
        this.set(id, { state: 'loaded', change });
        return change;
      },
      (error: unknown) => {
        if (BridgeError.is(error) && error.code === 'not_found') this.set(id, { state: 'gone' });
        else this.set(id, { state: 'error', message: error instanceof Error ? error.message : String(error) });
        return undefined;
      },
    );
  }

  /** Applies `ids` in order; on success each is fetched again (its state is `applied` now). */
  async apply(ids: string[]): Promise<ApplyOutcome> {
    const outcome = await this.calls.applyChanges(ids);
    if (outcome.ok) await Promise.all(ids.map((id) => this.load(id, true)));
    return outcome;
  }

  async discard(id: string): Promise<void> {
    await this.calls.discardChange(id);
    this.set(id, { state: 'gone' });
  }

  async keep(id: string): Promise<void> {
    const record = await this.calls.keepBranch(id);
    const known = this.known.get(id);
    if (known?.state === 'loaded') this.set(id, { state: 'loaded', change: { ...known.change, record } });
    else void this.load(id, true);
  }

  private set(id: string, known: Known): void {
    this.known.set(id, known);
    for (const listener of this.listeners) listener(id);
  }
}

/** The details pane's Change section: hidden for a task that runs in no worktree. */
export class ChangeSection {
  readonly root = h('section', { class: 'section change', attrs: { 'aria-label': 'Change' }, hidden: true });
  private readonly applyButton = h('button', { text: 'Apply', class: 'primary', attrs: { type: 'button', 'data-action': 'apply' } });
  private readonly keepButton = h('button', { text: 'Keep branch', attrs: { type: 'button', 'data-action': 'keep' } });
  private readonly discardButton = h('button', { text: 'Discard', class: 'danger', attrs: { type: 'button', 'data-action': 'discard' } });
  private readonly followUpButton = h('button', { text: 'Follow up', attrs: { type: 'button', 'data-action': 'follow-up' } });
  private readonly buttons = h('div', { class: 'section-buttons change-buttons' }, [
    this.followUpButton,
    this.applyButton,
    this.keepButton,
    this.discardButton,
  ]);
  private readonly facts = h('p', { class: 'change-facts' });
  private readonly stateLine = h('p', { class: 'change-state', role: 'status' });
  private readonly conflict = h('div', { class: 'change-conflict', role: 'alert', hidden: true });
  private readonly diffHost = h('div', { class: 'change-diff' });
  private task: TaskSnapshot | undefined;
  private key: string | undefined;
  private busy = false;

  constructor(
    private readonly store: ChangeStore,
    private readonly notices: ReviewNotices,
    /** The label of another task (the one a follow-up continues). */
    private readonly labelOf: (id: string) => string = (id) => id,
    /** The thread of a task: its runs share one worktree, whose change is on the newest run. */
    private readonly threadOf: ThreadOf = () => undefined,
    /** Continues the task in its worktree with a new input (absent: no Follow up button). */
    private readonly followUp?: (task: TaskSnapshot) => void,
  ) {
    this.root.append(
      h('div', { class: 'section-head' }, [h('h3', { text: 'Change' }), this.buttons]),
      this.facts,
      this.stateLine,
      this.conflict,
      this.diffHost,
    );
    this.applyButton.addEventListener('click', () => void this.act('apply'));
    this.keepButton.addEventListener('click', () => void this.act('keep'));
    this.discardButton.addEventListener('click', () => void this.act('discard'));
    this.followUpButton.addEventListener('click', () => this.task && this.followUp?.(this.task));
    store.on((id) => {
      if (id === this.task?.id) this.render(true);
    });
  }

  /** Shows the change of `task` (rebuilt only when the task's change or what is known of it changed). */
  show(task: TaskSnapshot): void {
    if (this.task?.id !== task.id) this.conflict.hidden = true;
    this.task = task;
    this.render(false);
  }

  reset(): void {
    this.task = undefined;
    this.key = undefined;
  }

  private render(force: boolean): void {
    const task = this.task;
    if (!task) return;
    const known = this.store.get(task.id);
    const thread = this.threadOf(task.id);
    const later = thread && thread.head.id !== task.id ? thread.head : undefined;
    const runs = thread?.runs.length ?? 1;
    const key = `${task.id}:${task.state}:${task.change ? 'change' : ''}:${known?.state ?? ''}:${knownState(known) ?? ''}:${this.busy}:${runs}:${later?.id ?? ''}`;
    if (!force && key === this.key) return;
    const sameTask = this.key?.startsWith(`${task.id}:`) ?? false;
    this.key = key;
    this.root.hidden = task.worktree === undefined;
    if (!task.worktree) return;
    const { branch, base, baseSha, repo } = task.worktree;
    if (later) {
      // An earlier run of a thread: the worktree went on with the later runs, and the thread's one
      // change (Apply, Keep branch, Discard included) is the newest run's.
      this.facts.textContent = `branch ${branch} from ${base} (${baseSha.slice(0, 8)}) · run ${thread!.runs.indexOf(task) + 1} of ${runs} · ${repo}`;
      this.stateLine.textContent = `Continued by ${later.label}: the change of the whole thread is on its newest run (run ${runs}).`;
      this.buttons.hidden = true;
      this.conflict.hidden = true;
      this.diffHost.dataset.key = '';
      this.diffHost.replaceChildren();
      return;
    }
    const size = task.change ? `${describeChange(task.change)} · ` : '';
    const commits = task.change?.commits.length
      ? ` · ${task.change.commits.length} commit${task.change.commits.length === 1 ? '' : 's'}`
      : '';
    // A follow-up continues the thread of its parent, in the same worktree: its change is the thread's.
    const threadText = runs > 1 ? ` · the whole change of ${runs} runs` : task.parent ? ` · follow-up of ${this.labelOf(task.parent)}` : '';
    this.facts.textContent = `${size}branch ${branch} from ${base} (${baseSha.slice(0, 8)})${commits}${threadText} · ${repo}`;
    if (isReviewable(task) && !known) void this.store.load(task.id);
    const state = !isReviewable(task) ? 'working' : known?.state === 'gone' ? 'discarded' : knownState(known);
    this.stateLine.textContent =
      known?.state === 'error'
        ? `Could not load the change: ${known.message}`
        : state
          ? STATE_TEXT[state]
          : isFinished(task.state)
            ? 'The task ended without a recorded change.'
            : STATE_TEXT.working;
    this.buttons.hidden = state === 'discarded' || state === 'working' || state === undefined;
    this.applyButton.disabled = this.busy || (state !== 'ready' && state !== 'kept');
    this.keepButton.disabled = this.busy || (state !== 'ready' && state !== 'applied');
    this.discardButton.disabled = this.busy;
    // The worktree is there to continue in while the change is ready or applied (kept: it is gone).
    this.followUpButton.hidden = this.followUp === undefined;
    this.followUpButton.disabled = this.busy || (state !== 'ready' && state !== 'applied');
    if (known?.state === 'loaded') {
      // The diff is built once per task and fetched change (an action's new state keeps it).
      const diffKey = `${task.id}:${known.change.diff.length}`;
      if (!sameTask || this.diffHost.dataset.key !== diffKey) {
        this.diffHost.dataset.key = diffKey;
        const started = performance.now();
        this.diffHost.replaceChildren(diffView(singleDiffFiles(parseUnifiedDiff(known.change.diff)), { label: `Diff of ${task.label}` }));
        // Observable (bench/diff-render.js): parsing the diff and building its view, layout and paint not included.
        performance.measure(DIFF_MEASURE, { start: started, end: performance.now() });
      }
    } else if (state === 'discarded' || !isReviewable(task)) {
      this.diffHost.dataset.key = '';
      this.diffHost.replaceChildren();
    } else if (!this.diffHost.dataset.key?.startsWith(`${task.id}:`)) {
      this.diffHost.dataset.key = '';
      this.diffHost.replaceChildren(h('p', { class: 'result-loading', text: 'Loading the diff…' }));
    }
  }

  private async act(action: 'apply' | 'keep' | 'discard'): Promise<void> {
    const task = this.task;
    if (!task || this.busy) return;
    this.busy = true;
    this.conflict.hidden = true;
    this.render(true);
    try {
      if (action === 'apply') {
        const outcome = await this.store.apply([task.id]);
        if (outcome.ok) this.notices.toast(`Applied: ${outcome.files.length} file${outcome.files.length === 1 ? '' : 's'} changed`);
        else if (this.task?.id === task.id) showConflict(this.conflict, outcome, (id) => (id === task.id ? task.label : id));
      } else if (action === 'keep') {
        await this.store.keep(task.id);
        this.notices.toast(`Branch ${task.worktree?.branch ?? ''} kept`);
      } else {
        await this.store.discard(task.id);
        this.notices.toast('Change discarded');
      }
    } catch (error) {
      this.notices.error(error);
    } finally {
      this.busy = false;
      this.render(true);
    }
  }
}

function knownState(known: Known | undefined): ChangeState | undefined {
  return known?.state === 'loaded' ? known.change.record.state : undefined;
}

/** A refused apply: what the broker said, and the conflicting files as a list. */
function showConflict(el: HTMLElement, outcome: Extract<ApplyOutcome, { ok: false }>, labelOf: (id: string) => string): void {
  const { taskId, files } = outcome.conflict;
  el.replaceChildren(
    h('p', {
      class: 'change-conflict-title',
      text: `Not applied: the change of ${labelOf(taskId)} does not apply cleanly to your checkout, and nothing was changed.`,
    }),
    ...(files.length
      ? [
          h('p', { text: `Conflicting file${files.length === 1 ? '' : 's'}:` }),
          h(
            'ul',
            { class: 'conflict-files', attrs: { 'aria-label': 'Conflicting files' } },
            files.map((file) => h('li', {}, [h('code', { text: file })])),
          ),
        ]
      : []),
    h('p', { class: 'change-conflict-detail', text: outcome.message }),
  );
  el.hidden = false;
}

/* ---------- several tasks together ---------- */

/**
 * The bar above the task list while tasks are marked for review (checkbox, Ctrl/Cmd-click or X on a
 * row): how many, whether they can be reviewed together (finished, one repository), and the button.
 */
export class ReviewBar {
  readonly root = h('div', { class: 'review-bar', role: 'region', attrs: { 'aria-label': 'Review together' }, hidden: true });
  private readonly text = h('span', { class: 'review-bar-text', role: 'status' });
  private readonly reviewButton = h('button', { text: 'Review together', class: 'primary', attrs: { type: 'button' } });
  private readonly clearButton = h('button', { text: 'Clear', class: 'quiet', attrs: { type: 'button' } });
  private ids: string[] = [];

  constructor(actions: { review(ids: string[]): void; clear(): void }) {
    this.root.append(this.text, this.reviewButton, this.clearButton);
    this.reviewButton.addEventListener('click', () => actions.review(this.ids));
    this.clearButton.addEventListener('click', () => actions.clear());
  }

  update(ids: string[], tasks: ReadonlyMap<string, TaskSnapshot>): void {
    this.ids = ids;
    this.root.hidden = ids.length === 0;
    const repos = new Set(ids.map((id) => tasks.get(id)?.worktree?.repo));
    const problem =
      ids.length < 2
        ? 'select another finished coding task on the same repository'
        : repos.size > 1
          ? 'these tasks changed different repositories: review them separately'
          : undefined;
    this.text.textContent = `${ids.length} selected${problem ? ` — ${problem}` : ''}`;
    this.reviewButton.disabled = problem !== undefined;
  }
}

/** The combined review, shown in the details pane in place of one task's details. */
export class CombinedReview {
  readonly root = h('article', { class: 'review-pane', attrs: { 'aria-labelledby': 'review-title' }, tabIndex: -1, hidden: true });
  private order: string[] = [];
  private tasks: ReadonlyMap<string, TaskSnapshot> = new Map();
  private readonly orderList = h('ol', { class: 'review-order', attrs: { 'aria-label': 'Order to apply in' } });
  private readonly applyButton = h('button', { class: 'primary', attrs: { type: 'button', 'data-action': 'apply-all' } });
  private readonly outcome = h('div', { class: 'change-conflict', role: 'alert', hidden: true });
  private readonly overlapList = h('div', { class: 'review-overlaps' });
  private readonly diffHost = h('div', { class: 'change-diff' });
  private generation = 0;

  constructor(
    private readonly store: ChangeStore,
    private readonly notices: ReviewNotices,
    close: () => void,
  ) {
    const closeButton = h('button', { text: 'Close', class: 'quiet', attrs: { type: 'button', 'aria-label': 'Close the review' } });
    closeButton.addEventListener('click', close);
    this.applyButton.addEventListener('click', () => void this.apply());
    this.root.append(
      h('header', { class: 'details-head' }, [
        h('h2', { class: 'review-title', text: 'Review together', attrs: { id: 'review-title' } }),
        h('div', { class: 'details-buttons' }, [closeButton]),
      ]),
      h('section', { class: 'section' }, [
        h('h3', { text: 'Apply in this order' }),
        this.orderList,
        h('div', { class: 'section-buttons' }, [this.applyButton]),
        this.outcome,
      ]),
      h('section', { class: 'section' }, [h('h3', { text: 'Where they overlap' }), this.overlapList]),
      h('section', { class: 'section' }, [h('h3', { text: 'Their changes, file by file' }), this.diffHost]),
    );
  }

  get shown(): boolean {
    return !this.root.hidden;
  }

  async open(ids: string[], tasks: ReadonlyMap<string, TaskSnapshot>): Promise<void> {
    const generation = ++this.generation;
    this.order = [...ids];
    this.tasks = tasks;
    this.root.hidden = false;
    this.outcome.hidden = true;
    this.renderOrder();
    this.overlapList.replaceChildren(h('p', { class: 'result-loading', text: 'Loading the changes…' }));
    this.diffHost.replaceChildren();
    const changes = await Promise.all(ids.map((id) => this.store.load(id)));
    if (generation !== this.generation) return;
    const missing = ids.filter((_, i) => !changes[i]);
    if (missing.length) {
      this.overlapList.replaceChildren(
        h('p', { class: 'result-error', text: `No change is kept for ${missing.map((id) => this.label(id)).join(', ')}.` }),
      );
      return;
    }
    const view = combineChanges(ids.map((id, i) => ({ taskId: id, diff: changes[i]!.diff })));
    this.renderOverlaps(view);
    this.diffHost.replaceChildren(
      diffView(
        combinedFiles(view, (id) => this.label(id)),
        { label: 'Combined diff' },
      ),
    );
  }

  hide(): void {
    this.generation += 1;
    this.root.hidden = true;
  }

  private label(id: string): string {
    return this.tasks.get(id)?.label ?? id;
  }

  private renderOrder(): void {
    const items = this.order.map((id, i) => {
      const task = this.tasks.get(id);
      const move = (to: number): void => {
        const [moved] = this.order.splice(i, 1);
        this.order.splice(to, 0, moved!);
        this.renderOrder();
        (this.orderList.children[to]?.querySelector(to < i ? '[data-move="up"]' : '[data-move="down"]') as HTMLElement | null)?.focus();
      };
      const up = h('button', {
        text: '↑',
        class: 'quiet',
        attrs: { type: 'button', 'data-move': 'up', 'aria-label': `Move ${this.label(id)} up` },
      });
      const down = h('button', {
        text: '↓',
        class: 'quiet',
        attrs: { type: 'button', 'data-move': 'down', 'aria-label': `Move ${this.label(id)} down` },
      });
      up.disabled = i === 0;
      down.disabled = i === this.order.length - 1;
      up.addEventListener('click', () => move(i - 1));
      down.addEventListener('click', () => move(i + 1));
      return h('li', { class: 'review-task', attrs: { 'data-id': id } }, [
        h('span', { class: 'review-task-label', text: this.label(id) }),
        h('span', { class: 'review-task-size', text: task?.change ? describeChange(task.change) : '' }),
        up,
        down,
      ]);
    });
    this.orderList.replaceChildren(...items);
    this.applyButton.textContent = `Apply ${this.order.length} in this order`;
  }

  private renderOverlaps(view: CombinedView): void {
    if (view.overlaps.length === 0) {
      this.overlapList.replaceChildren(
        h('p', { class: 'review-no-overlap', text: 'Nowhere: no two of them touched the same or adjacent lines.' }),
      );
      return;
    }
    this.overlapList.replaceChildren(
      h(
        'ul',
        { class: 'overlap-list' },
        view.overlaps.map((overlap) =>
          h('li', { class: 'overlap' }, [
            h('code', { text: overlap.path }),
            ` ${overlap.kind === 'file' ? 'the whole file' : `lines ${overlap.lines.from}–${overlap.lines.to}`}: ${this.label(overlap.a.taskId)} and ${this.label(overlap.b.taskId)}`,
          ]),
        ),
      ),
    );
  }

  private async apply(): Promise<void> {
    const order = [...this.order];
    this.applyButton.disabled = true;
    this.outcome.hidden = true;
    try {
      const outcome = await this.store.apply(order);
      if (outcome.ok) {
        this.notices.toast(`Applied ${order.length} changes: ${outcome.files.length} file${outcome.files.length === 1 ? '' : 's'} changed`);
        this.outcome.replaceChildren(
          h('p', { class: 'review-applied', text: `Applied, in order: ${order.map((id) => this.label(id)).join(', ')}.` }),
        );
        this.outcome.hidden = false;
      } else {
        showConflict(this.outcome, outcome, (id) => this.label(id));
      }
    } catch (error) {
      this.notices.error(error);
    } finally {
      this.applyButton.disabled = false;
    }
  }
}

/** The combined view as the diff view takes it: one block per file, one part per task, overlapping hunks flagged. */
function combinedFiles(view: CombinedView, labelOf: (id: string) => string): DiffViewFile[] {
  return view.files.map((file) => {
    const flags = new Map<string, Map<number, string>>();
    const flag = (taskId: string, hunk: number, text: string): void => {
      let byHunk = flags.get(taskId);
      if (!byHunk) flags.set(taskId, (byHunk = new Map()));
      byHunk.set(hunk, byHunk.has(hunk) ? `${byHunk.get(hunk)!}; ${text}` : text);
    };
    for (const overlap of file.overlaps) {
      const where = overlap.kind === 'file' ? 'the whole file' : `base lines ${overlap.lines.from}–${overlap.lines.to}`;
      flag(overlap.a.taskId, overlap.a.hunk, `Overlaps with ${labelOf(overlap.b.taskId)} (${where})`);
      flag(overlap.b.taskId, overlap.b.hunk, `Overlaps with ${labelOf(overlap.a.taskId)} (${where})`);
    }
    const parts: FilePart[] = file.parts.map((part) => ({ file: part.file, owner: labelOf(part.taskId), flags: flags.get(part.taskId) }));
    return { path: file.path, parts, flagged: file.overlaps.length > 0 };
  });
}
