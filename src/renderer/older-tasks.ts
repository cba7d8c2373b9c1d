/**
 * Tasks older than the event stream's picture. The picture holds every live task and the newest
 * TASK_PAGE_SIZE of all, with the cursor of the older ones (`BridgeEvent.older`): bounded however
 * long the history is (docs/performance.md § How cost grows with history). The rest comes a page at a time, from the hub's pages
 * (`listTaskPage({ before })`), when the end of the list scrolls into view or "Show older tasks" is
 * pressed. A new picture (a reconnect) starts over from its own cursor.
 */
import type { BackchannelBridge, TaskSnapshot } from '../bridge/contract.js';
import { TASK_PAGE_SIZE } from '../bridge/contract.js';
import { h } from './dom.js';

export interface OlderTasksActions {
  /** A page of older tasks arrived (newest first). */
  loaded(tasks: TaskSnapshot[]): void;
  error(error: unknown): void;
}

export class OlderTasks {
  readonly root = h('div', { class: 'older-tasks', hidden: true });
  private readonly button = h('button', { text: 'Show older tasks', class: 'quiet', attrs: { type: 'button', id: 'older-tasks' } });
  /** The cursor of the next older page; undefined when there is none. */
  private cursor: string | undefined;
  /** Bumped by every new picture: a page asked for before it is dropped. */
  private generation = 0;
  private loading = false;

  constructor(
    private readonly bridge: Pick<BackchannelBridge, 'listTaskPage'>,
    private readonly actions: OlderTasksActions,
  ) {
    this.root.append(this.button);
    this.button.addEventListener('click', () => void this.loadMore());
    // The end of the list in view: the next page, as if pressed (the root is hidden when there is none).
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) void this.loadMore();
    });
    observer.observe(this.root);
  }

  /** A new picture, with the cursor of the tasks older than it (undefined: it has them all). */
  reset(cursor: string | undefined): void {
    this.generation += 1;
    this.cursor = cursor;
    this.loading = false;
    this.sync();
  }

  /** Pages in the next older page, once at a time. */
  async loadMore(): Promise<void> {
    if (this.loading || this.cursor === undefined) return;
    const generation = this.generation;
    this.loading = true;
    this.sync();
    try {
      const page = await this.bridge.listTaskPage({ before: this.cursor, limit: TASK_PAGE_SIZE });
      if (generation !== this.generation) return;
      this.cursor = page.next;
      this.actions.loaded(page.tasks);
    } catch (error) {
      if (generation === this.generation) this.actions.error(error);
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        this.sync();
      }
    }
  }

  private sync(): void {
    this.root.hidden = this.cursor === undefined;
    this.button.disabled = this.loading;
    this.button.textContent = this.loading ? 'Loading older tasks…' : 'Show older tasks';
  }
}
