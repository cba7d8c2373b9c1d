/**
 * The details pane's Thread section: the runs of a coding task's thread (the task and its
 * follow-ups, src/model/threads.ts), in order, each one click away. Hidden for a task without
 * follow-ups.
 */
import type { TaskSnapshot } from '../bridge/contract.js';
import { describeChange } from '../model/change.js';
import type { Thread } from '../model/threads.js';
import type { DetailsSection } from './details.js';
import { h } from './dom.js';
import { isFinished, STATE_LABEL, taskTime } from './format.js';

export type ThreadOf = (id: string) => Thread<TaskSnapshot> | undefined;

export class ThreadSection implements DetailsSection {
  readonly root = h('section', { class: 'section thread', attrs: { 'aria-label': 'Thread' }, hidden: true });
  private readonly heading = h('h3');
  private readonly note = h('p', { class: 'thread-note' });
  private readonly list = h('ol', { class: 'thread-runs', attrs: { 'aria-label': 'Runs of this thread, oldest first' } });
  private key: string | undefined;

  constructor(
    private readonly threadOf: ThreadOf,
    private readonly open: (id: string) => void,
  ) {
    this.root.append(this.heading, this.note, this.list);
  }

  show(task: TaskSnapshot): void {
    const thread = this.threadOf(task.id);
    const runs = thread?.runs ?? [];
    const now = Date.now();
    // A run's time shows once it ended (its badge says it runs meanwhile): the list is not rebuilt every second.
    const timeOf = (run: TaskSnapshot): string => (isFinished(run.state) ? taskTime(run, now) : '');
    const key = `${task.id}|${runs.map((run) => `${run.id}:${run.state}:${run.label}:${run.change ? describeChange(run.change) : ''}:${timeOf(run)}`).join('|')}`;
    if (key === this.key) return;
    this.key = key;
    this.root.hidden = runs.length < 2;
    if (!thread || runs.length < 2) return;
    this.heading.textContent = `Thread: ${runs.length} runs in one worktree`;
    const head = thread.head;
    this.note.textContent =
      head.id === task.id
        ? 'Each run continued in the worktree of the one before: this run’s change is the whole thread’s.'
        : `Each run continued in the worktree of the one before: the whole thread’s change is on its newest run (run ${runs.length}).`;
    this.list.replaceChildren(
      ...runs.map((run, i) => {
        const current = run.id === task.id;
        const open = h('button', {
          class: 'quiet thread-run-open',
          text: run.label,
          attrs: { type: 'button', 'aria-label': `Open run ${i + 1}: ${run.label}`, ...(current ? { 'aria-current': 'true' } : {}) },
        });
        open.disabled = current;
        open.addEventListener('click', () => this.open(run.id));
        const change = run.id === head.id && run.change ? describeChange(run.change) : '';
        return h('li', { class: `thread-run-item${current ? ' current' : ''}`, attrs: { 'data-id': run.id } }, [
          h('span', { class: 'thread-run-number', text: `Run ${i + 1}` }),
          h('span', { class: `badge badge-${run.state}`, text: STATE_LABEL[run.state] }),
          open,
          h('span', { class: 'thread-run-time', text: timeOf(run) }),
          h('span', { class: 'thread-run-change', text: change }),
        ]);
      }),
    );
  }

  reset(): void {
    this.key = undefined;
  }
}
