/**
 * The Schedules view (docs/schedules.md): every schedule of the hub with its cadence, its next fire
 * in local time, its last run and that run's state; pause/resume, run now, delete (after a confirm in
 * the row) and each schedule's fire history — a fire that ran links to its task, a skipped one says
 * why. New schedules come from ScheduleDialog (./schedule-form.ts); the hub's run policy judges their
 * command, and its one-line refusal shows in the dialog.
 *
 * Guarantees: text only (schedule names, commands and reasons go in through `textContent`, ./dom.ts);
 * one request at a time (a refresh asked for meanwhile follows it, once); rows and their buttons are
 * kept between refreshes, so focus and an open history survive the poll.
 */
import type { BackchannelBridge, FireRecord, ScheduleView } from '../bridge/contract.js';
import { FIRE_PAGE_SIZE, MAX_FIRE_PAGE_SIZE } from '../bridge/contract.js';
import { shortTaskId } from '../model/task-ids.js';
import { h, setText } from './dom.js';
import { commandLine, formatDuration, STATE_LABEL } from './format.js';

/**
 * Fire records a history shows at first: the hub's page. "Show older fires" asks for the newest
 * `limit` again with a larger limit (up to MAX_FIRE_PAGE_SIZE), not for the page below a cursor:
 * the newest page moves on while a schedule fires, and a longer newest page leaves no gap.
 */
export const HISTORY_SHOWN = FIRE_PAGE_SIZE;

type SkipReason = NonNullable<FireRecord['reason']>;

/** Why a fire did not run, in words (the reason code stays on the row as `data-reason`). */
export const SKIP_REASON_LABEL: Record<SkipReason, string> = {
  overlap: 'a run was still active',
  paused: 'the schedule was paused',
  hub_down: 'the hub was down',
  budget_spent: 'the budget was spent',
  refused: 'the run policy refused its command',
};

type Schedule = ScheduleView['schedule'];

/** "every 2s", "cron 0 9 * * 1-5 (Europe/Paris)", or "(hub's zone)" when it names none. */
export function cadenceText(schedule: Pick<Schedule, 'everyMs' | 'cron' | 'tz'>): string {
  if (schedule.everyMs !== undefined) return `every ${formatDuration(schedule.everyMs)}`;
  return `cron ${schedule.cron ?? '?'} (${schedule.tz ?? "hub's zone"})`;
}

/** What a schedule runs: its command line, or its preset. */
export function scheduleCommand(schedule: Pick<Schedule, 'command' | 'preset'>): string {
  if (schedule.command) return commandLine(schedule.command[0] ?? '', schedule.command.slice(1));
  return `preset ${schedule.preset ?? '?'}`;
}

/** An epoch-ms time in the viewer's zone: "12/5/26, 10:51:02 AM". */
export function localTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** One fire in words, without its task link: "ran (catch-up)", "skipped ×12: the hub was down". */
export function fireText(fire: Pick<FireRecord, 'outcome' | 'reason' | 'count' | 'catchUp' | 'manual' | 'hub'>): string {
  if (fire.outcome === 'elsewhere') return `decided by hub ${fire.hub ?? '?'} (fleet)`;
  const how = [fire.catchUp ? 'catch-up' : '', fire.manual ? 'run now' : ''].filter(Boolean).join(', ');
  if (fire.outcome === 'ran') return how ? `ran (${how})` : 'ran';
  if (fire.outcome === 'buffered') return 'waits for the active run to end';
  const times = fire.count !== undefined && fire.count > 1 ? ` ×${fire.count}` : '';
  return `skipped${times}: ${fire.reason ? SKIP_REASON_LABEL[fire.reason] : 'no reason recorded'}`;
}

/** The time of a fire, or of a run of skipped ones: "10:51:02 … 10:55:40". */
export function fireTimeText(fire: Pick<FireRecord, 'at' | 'until'>): string {
  return fire.until !== undefined && fire.until !== fire.at ? `${localTime(fire.at)} … ${localTime(fire.until)}` : localTime(fire.at);
}

/** The row's "Last run" line: the newest fire that ran and its task's state, or the newest skip. */
export function lastRunText(view: Pick<ScheduleView, 'lastFire' | 'lastRun' | 'lastRunState'>): string {
  const run = view.lastRun;
  const ran = run ? `Last run ${localTime(run.at)}${view.lastRunState ? ` · ${STATE_LABEL[view.lastRunState]}` : ''}` : 'Not run yet';
  const last = view.lastFire;
  if (last && last.outcome === 'skipped' && (!run || last.at > run.at)) return `${ran} · last fire ${fireText(last)}`;
  return ran;
}

export interface SchedulesActions {
  /** Shows a fire's task in the panel. */
  openTask(id: string): void;
  /** Opens the New schedule dialog. */
  create(): void;
  toast(message: string): void;
  error(error: unknown): void;
}

type ScheduleCalls = Pick<BackchannelBridge, 'listSchedules' | 'getSchedule' | 'setSchedulePaused' | 'removeSchedule' | 'runScheduleNow'>;

export class SchedulesView {
  readonly root = h('section', { class: 'schedules', attrs: { 'aria-label': 'Schedules' } });
  private readonly list = h('ul', { class: 'schedule-list', attrs: { 'aria-label': 'Schedules' } });
  private readonly empty = h('div', { class: 'empty schedules-empty', hidden: true }, [
    h('div', { class: 'empty-mark', attrs: { 'aria-hidden': 'true' } }),
    h('h2', { text: 'No schedules yet' }),
    h('p', { text: 'A schedule runs a command at cron times or at a fixed interval, and records every fire: ran, or skipped and why.' }),
  ]);
  /** Why the list could not be read (a hub without a scheduler, a lost connection), while it cannot. */
  private readonly problem = h('p', { class: 'form-error schedules-problem', role: 'alert', hidden: true });
  private readonly rows = new Map<string, ScheduleRow>();
  /** Task ids of the fires shown: an event about one of them refreshes the view (its state changed). */
  private readonly fireTasks = new Set<string>();
  private loading: Promise<void> | undefined;
  private again = false;
  private loaded = false;

  constructor(
    private readonly bridge: ScheduleCalls,
    private readonly actions: SchedulesActions,
  ) {
    const create = (): HTMLButtonElement =>
      h('button', { text: 'New schedule', class: 'primary', attrs: { type: 'button' }, on: { click: () => actions.create() } });
    const head = h('div', { class: 'schedules-head' }, [h('h2', { text: 'Schedules' }), create()]);
    this.empty.append(create());
    this.root.append(head, this.problem, this.empty, this.list);
  }

  /** The names of the schedules shown. */
  names(): string[] {
    return [...this.rows.keys()];
  }

  /** Whether an event's tasks concern the view (the task of a fire it shows). */
  concerns(taskIds: readonly string[]): boolean {
    return taskIds.some((id) => this.fireTasks.has(id));
  }

  /** Fetches the list and every open history, and draws them. Never throws (errors go to `actions.error`). */
  async refresh(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      do {
        this.again = false;
        try {
          await this.load();
          this.problem.hidden = true;
        } catch (error) {
          // Said once in a toast and kept in the view: the poll would repeat it every few seconds.
          const message = error instanceof Error ? error.message : String(error);
          if (this.problem.hidden || this.problem.textContent !== message) this.actions.error(error);
          setText(this.problem, message);
          this.problem.hidden = false;
        }
      } while (this.again);
    })();
    try {
      await this.loading;
    } finally {
      this.loading = undefined;
    }
  }

  private async load(): Promise<void> {
    const views = await this.bridge.listSchedules();
    const open = views.filter((view) => this.rows.get(view.schedule.name)?.historyOpen);
    const histories = await Promise.all(
      open.map((view) =>
        this.bridge.getSchedule(view.schedule.name, { limit: this.rows.get(view.schedule.name)!.historyLimit }).then(
          (details) => details,
          () => undefined, // removed meanwhile: the next refresh drops its row
        ),
      ),
    );
    this.fireTasks.clear();
    const names = new Set(views.map((view) => view.schedule.name));
    for (const [name, row] of this.rows) {
      if (names.has(name)) continue;
      row.root.remove();
      this.rows.delete(name);
    }
    const now = Date.now();
    views.forEach((view, i) => {
      let row = this.rows.get(view.schedule.name);
      if (!row) {
        row = new ScheduleRow(view.schedule.name, this.rowActions());
        this.rows.set(view.schedule.name, row);
      }
      row.update(view, now);
      if (this.list.children[i] !== row.root) this.list.insertBefore(row.root, this.list.children[i] ?? null);
      for (const fire of [view.lastFire, view.lastRun]) if (fire?.taskId) this.fireTasks.add(fire.taskId);
    });
    open.forEach((view, i) => {
      const details = histories[i];
      if (!details) return;
      this.rows.get(view.schedule.name)?.setHistory(details.fires, details.total);
      for (const fire of details.fires) if (fire.taskId) this.fireTasks.add(fire.taskId);
    });
    this.loaded = true;
    this.empty.hidden = views.length > 0;
    this.list.hidden = views.length === 0;
    this.root.dataset.count = String(views.length);
  }

  /** Whether the first list has been drawn (tests and the panel read it). */
  get ready(): boolean {
    return this.loaded;
  }

  private rowActions(): RowActions {
    const act = (work: Promise<unknown>, done: string): void => {
      work.then(
        () => {
          this.actions.toast(done);
          void this.refresh();
        },
        (error: unknown) => {
          this.actions.error(error);
          void this.refresh();
        },
      );
    };
    return {
      pause: (name, paused) => act(this.bridge.setSchedulePaused(name, paused), paused ? `Paused ${name}` : `Resumed ${name}`),
      runNow: (name) => act(this.bridge.runScheduleNow(name), `Started ${name}`),
      remove: (name) => act(this.bridge.removeSchedule(name), `Deleted ${name}`),
      history: () => void this.refresh(),
      openTask: (id) => this.actions.openTask(id),
    };
  }
}

interface RowActions {
  pause(name: string, paused: boolean): void;
  runNow(name: string): void;
  remove(name: string): void;
  /** The history was opened: fetch it. */
  history(): void;
  openTask(id: string): void;
}

/** One schedule: its facts, its buttons, the delete confirm and (when open) its fire history. */
class ScheduleRow {
  readonly root: HTMLLIElement;
  private readonly badge = h('span', { class: 'badge badge-paused', text: 'Paused', hidden: true });
  private readonly cadence = h('span', { class: 'schedule-cadence' });
  private readonly command = h('code', { class: 'schedule-command' });
  private readonly next = h('span', { class: 'schedule-next' });
  private readonly last = h('span', { class: 'schedule-last' });
  private readonly pauseButton = h('button', { class: 'schedule-pause', attrs: { type: 'button' } });
  private readonly historyButton = h('button', {
    text: 'History',
    class: 'schedule-history-toggle',
    attrs: { type: 'button', 'aria-expanded': 'false' },
  });
  private readonly confirm = h('div', { class: 'schedule-confirm', role: 'group', hidden: true });
  private readonly history = h('div', { class: 'schedule-history', hidden: true });
  private paused = false;
  /** How many of the newest fire records the history asks for. */
  historyLimit = HISTORY_SHOWN;
  private readonly historyTitle = h('h3', { text: 'Fire history' });
  private readonly historyBody = h('div', { class: 'schedule-history-body' }, [
    h('p', { class: 'schedule-history-empty', text: 'Loading…' }),
  ]);
  private readonly moreButton = h('button', {
    text: 'Show older fires',
    class: 'quiet schedule-history-more',
    attrs: { type: 'button' },
    hidden: true,
  });
  private readonly moreNote = h('p', { class: 'schedule-history-empty', hidden: true });
  /** The history last drawn, so an unchanged one is not rebuilt (a focused task link keeps its focus). */
  private drawn = '';

  constructor(
    private readonly name: string,
    private readonly actions: RowActions,
  ) {
    const historyId = `schedule-history-${cssSafe(name)}`;
    this.history.id = historyId;
    this.historyButton.setAttribute('aria-controls', historyId);
    this.pauseButton.addEventListener('click', () => actions.pause(name, !this.paused));
    this.historyButton.addEventListener('click', () => this.toggleHistory());
    this.history.append(this.historyTitle, this.historyBody, this.moreButton, this.moreNote);
    this.moreButton.addEventListener('click', () => {
      this.historyLimit = Math.min(MAX_FIRE_PAGE_SIZE, this.historyLimit + HISTORY_SHOWN);
      actions.history();
    });
    const deleteButton = h('button', {
      text: 'Delete',
      class: 'danger schedule-delete',
      attrs: { type: 'button' },
      on: { click: () => this.askDelete(true) },
    });
    this.confirm.append(
      h('span', { text: `Delete schedule ${name}? Its fire history stays in the data directory.` }),
      h('button', {
        text: 'Delete',
        class: 'danger schedule-delete-confirm',
        attrs: { type: 'button' },
        on: { click: () => actions.remove(name) },
      }),
      h('button', { text: 'Keep', class: 'quiet', attrs: { type: 'button' }, on: { click: () => this.askDelete(false) } }),
    );
    this.confirm.setAttribute('aria-label', `Delete ${name}?`);
    this.root = h('li', { class: 'schedule', attrs: { 'data-name': name, 'aria-label': name } }, [
      h('div', { class: 'schedule-top' }, [
        h('span', { class: 'schedule-name', text: name, title: name }),
        this.badge,
        this.cadence,
        h('div', { class: 'schedule-buttons' }, [
          this.pauseButton,
          h('button', { text: 'Run now', class: 'schedule-run-now', attrs: { type: 'button' }, on: { click: () => actions.runNow(name) } }),
          this.historyButton,
          deleteButton,
        ]),
      ]),
      this.command,
      h('div', { class: 'schedule-facts' }, [this.next, this.last]),
      this.confirm,
      this.history,
    ]);
  }

  get historyOpen(): boolean {
    return !this.history.hidden;
  }

  update(view: ScheduleView, now: number): void {
    const { schedule } = view;
    this.paused = schedule.paused;
    this.root.dataset.paused = String(schedule.paused);
    this.badge.hidden = !schedule.paused;
    setText(this.pauseButton, schedule.paused ? 'Resume' : 'Pause');
    this.pauseButton.setAttribute('aria-pressed', String(schedule.paused));
    setText(this.cadence, cadenceText(schedule));
    setText(this.command, scheduleCommand(schedule));
    this.command.title = schedule.cwd ? `in ${schedule.cwd}` : '';
    const next = view.nextFireAt;
    setText(
      this.next,
      schedule.paused
        ? 'Next fire: paused'
        : next === undefined
          ? 'Next fire: none'
          : `Next fire ${localTime(next)} (in ${formatDuration(Math.max(0, next - now))})`,
    );
    const active = view.activeRuns > 0 ? ` · ${view.activeRuns} running` : '';
    setText(this.last, lastRunText(view) + active);
    this.last.dataset.state = view.lastRunState ?? '';
  }

  /** Draws the fire history, newest first. */
  setHistory(fires: readonly FireRecord[], total: number): void {
    const key = JSON.stringify([total, fires, this.historyLimit]);
    if (key === this.drawn) return;
    this.drawn = key;
    setText(this.historyTitle, total > fires.length ? `Fire history (newest ${fires.length} of ${total})` : `Fire history (${total})`);
    this.historyBody.replaceChildren(
      fires.length === 0
        ? h('p', { class: 'schedule-history-empty', text: 'No fires yet.' })
        : h(
            'ol',
            { class: 'fire-list', attrs: { 'aria-label': `Fires of ${this.name}, newest first` } },
            fires.map((fire) => fireItem(fire, this.actions)),
          ),
    );
    const older = total > fires.length;
    // Kept in place (not rebuilt), so a focused "Show older fires" keeps the focus.
    this.moreButton.hidden = !older || this.historyLimit >= MAX_FIRE_PAGE_SIZE;
    this.moreNote.hidden = !older || !this.moreButton.hidden;
    setText(this.moreNote, `Older fires: backchannel schedule show ${this.name} --limit ${total}`);
  }

  private toggleHistory(): void {
    const open = !this.historyOpen;
    this.history.hidden = !open;
    this.historyButton.setAttribute('aria-expanded', String(open));
    if (open) this.actions.history();
  }

  private askDelete(ask: boolean): void {
    this.confirm.hidden = !ask;
    if (ask) this.confirm.querySelector<HTMLButtonElement>('.schedule-delete-confirm')?.focus();
  }
}

/** One fire in the history: its time, what happened, and a link to its task when it ran. */
function fireItem(fire: FireRecord, actions: Pick<RowActions, 'openTask'>): HTMLLIElement {
  const taskId = fire.taskId;
  const link = taskId
    ? h('button', {
        class: 'link fire-task',
        text: `task ${shortTaskId(taskId)}`,
        title: `Open task ${taskId}`,
        attrs: { type: 'button', 'data-task-id': taskId },
        on: { click: () => actions.openTask(taskId) },
      })
    : null;
  return h(
    'li',
    {
      class: `fire fire-${fire.outcome}`,
      attrs: { 'data-outcome': fire.outcome, ...(fire.reason ? { 'data-reason': fire.reason } : {}) },
    },
    [h('span', { class: 'fire-time', text: fireTimeText(fire) }), h('span', { class: 'fire-what', text: fireText(fire) }), link],
  );
}

/** A name as an id fragment: schedule names are letters, digits, ".", "_" and "-" already (the hub checks). */
function cssSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
}
