/**
 * The panel's entry point. Talks only to `window.backchannel` (the Electron preload, or the HTTP
 * bridge installed below when there is none). Events are merged into one map and drawn on the next
 * animation frame: at most one render per frame however fast tasks report (the bridge already spaces
 * its events by a frame, and by 100 ms while the broker is saturated), and none while the page is hidden.
 */
import type { BridgeEvent, BridgeInfo, TaskCounts, TaskSnapshot } from '../bridge/contract.js';
import { Details } from './details.js';
import { copyText as copyToClipboard, saveBlob, saveFile, toaster } from './feedback.js';
import { byId, setText } from './dom.js';
import { countsSummary, countsText, isFinished } from './format.js';
import { FIRST_PAGES, linkedTask } from './first-calls.js';
import { installHttpBridge } from './http-bridge.js';
import type { InsightsView } from './insights.js';
import { loadViews } from './lazy-views.js';
import type { NewTaskDialog } from './new-task.js';
import { ChangeSection, ChangeStore, CombinedReview, ReviewBar } from './review.js';
import { PanelNotifier } from './notifications.js';
import { OlderTasks } from './older-tasks.js';
import type { ScheduleDialog } from './schedule-form.js';
import type { SchedulesView } from './schedules.js';
import { TaskList } from './task-list.js';
import { ThreadSection } from './threads.js';

/** How often an open task's log is re-read while the task changes. */
const LOG_REFRESH_MS = 1000;
/** How often open insights are fetched again (the broker aggregates; one small request). */
const INSIGHTS_REFRESH_MS = 5000;
/**
 * How often open schedules are fetched again: their next fire and skipped fires change without any
 * task event (a fire that runs starts a task, whose events refresh the view at once).
 */
const SCHEDULES_REFRESH_MS = 2000;
/** How often the footer's fleet line (workers, load, heartbeat age) is refreshed. */
const FLEET_REFRESH_MS = 2000;

installHttpBridge();
const bridge = window.backchannel;

/**
 * The first paint's tasks (see `start` below): every live task, and the newest TASK_PAGE_SIZE of all.
 * boot.js asked for them before this script loaded (./first-calls.ts); the bridge takes its answers.
 */
const firstPages = Promise.all([bridge.listTaskPage(FIRST_PAGES[0]), bridge.listTaskPage(FIRST_PAGES[1])]);

const tasks = new Map<string, TaskSnapshot>();
let changed = new Set<string>();
let everything = true;
let frameRequested = false;
let info: BridgeInfo | undefined;
let paused = false;
let connected = false;
let logStale = false;
/** Tasks by state, of all the hub has (the list holds live tasks and the newest pages only). */
let counts: TaskCounts | undefined;

const listEl = byId<HTMLUListElement>('task-list');
const emptyEl = byId('empty');
const countsEl = byId('counts');
const pauseButton = byId<HTMLButtonElement>('pause');
const pausedBanner = byId('paused-banner');
const detailsPane = byId('details-pane');
const { toast, showError } = toaster(byId('toast'));
const copyText = (text: string): void => copyToClipboard(text, toast);
const app = byId('app');
const fleetEl = byId('fleet');

const list = new TaskList(listEl, {
  open: (id) => openTask(id),
  cancel: (id) => cancelTask(id),
  retry: (id) => retryTask(id),
  marked: (ids) => reviewBar.update(ids, tasks),
});
// Coding tasks' changes (docs/coding-agents.md): the details' Change section and the combined review.
const changes = new ChangeStore(bridge);
// Opened on a task by its link: its change is asked for beside the task, not after it (docs/performance.md).
const linked = linkedTask(location.hash);
if (linked) changes.prefetch(linked);
const notices = { toast: (message: string) => toast(message), error: (error: unknown) => showError(error) };
const reviewBar = new ReviewBar({ review: (ids) => openReview(ids), clear: () => list.clearMarks() });
listEl.before(reviewBar.root);
// Older tasks than the event stream's picture (live tasks and the newest page), a page at a time.
const olderTasks = new OlderTasks(bridge, {
  loaded: (page) => {
    for (const task of page) {
      if (tasks.has(task.id)) continue; // an event's snapshot is as new or newer
      tasks.set(task.id, task);
      changed.add(task.id);
    }
    everything = true;
    scheduleRender();
  },
  error: (error) => showError(error),
});
listEl.after(olderTasks.root);
const review = new CombinedReview(changes, notices, () => closeTask());
const details = new Details(
  {
    close: () => closeTask(),
    cancel: (id) => cancelTask(id),
    retry: (id) => retryTask(id),
    answer: (id, askId, text) => {
      bridge.answer(id, askId, text, 'panel').then(() => toast('Answer sent'), showError);
    },
    copy: (text) => copyText(text),
    download: (id, name) => {
      bridge.attachment(id, name).then(saveFile, showError);
    },
    loadResult: (id) => bridge.taskResult(id),
    saveText: (name, text) => saveBlob(name, new Blob([text], { type: 'application/json;charset=utf-8' })),
  },
  new ChangeSection(
    changes,
    notices,
    (id) => tasks.get(id)?.label ?? id,
    (id) => list.threadOf(id),
    (task) => void openFollowUp(task),
  ),
  new ThreadSection(
    (id) => list.threadOf(id),
    (id) => openTask(id),
  ),
);
detailsPane.append(details.root, review.root);
// Browser notifications (headless only; the desktop app's main process notifies): the bell in the header.
const notifier = new PanelNotifier(byId<HTMLButtonElement>('notify-toggle'), {
  openTask: (id) => openTask(id),
  toast: (text) => toast(text),
});
const insightsPane = byId('insights-pane');
const insightsButton = byId<HTMLButtonElement>('insights-toggle');
const schedulesPane = byId('schedules-pane');
const schedulesButton = byId<HTMLButtonElement>('schedules-toggle');
// The dialogs and the insights and schedules views are built when first wanted, from views.js (loaded after the first paint).
let dialog: NewTaskDialog | undefined;
let insights: InsightsView | undefined;
let schedules: SchedulesView | undefined;
let scheduleDialog: ScheduleDialog | undefined;

async function newTaskDialog(): Promise<NewTaskDialog> {
  const { NewTaskDialog } = await loadViews();
  if (dialog) return dialog;
  dialog = new NewTaskDialog(async (request) => {
    const { id } = await bridge.submit(request);
    toast('Task started');
    openTask(id);
  });
  document.body.append(dialog.dialog);
  return dialog;
}

async function insightsView(): Promise<InsightsView> {
  const { InsightsView } = await loadViews();
  if (insights) return insights;
  insights = new InsightsView(bridge, {
    open: (id) => {
      showInsights(false);
      openTask(id);
    },
    error: (error) => showError(error),
  });
  insightsPane.append(insights.root);
  return insights;
}

async function schedulesView(): Promise<SchedulesView> {
  const { SchedulesView } = await loadViews();
  if (schedules) return schedules;
  schedules = new SchedulesView(bridge, {
    openTask: (id) => {
      showSchedules(false);
      openTask(id);
    },
    create: () => void openNewSchedule(),
    toast: (message) => toast(message),
    error: (error) => showError(error),
  });
  schedulesPane.append(schedules.root);
  return schedules;
}

async function newScheduleDialog(): Promise<ScheduleDialog> {
  const { ScheduleDialog } = await loadViews();
  if (scheduleDialog) return scheduleDialog;
  scheduleDialog = new ScheduleDialog(async (request) => {
    const view = await bridge.addSchedule(request);
    toast(`Schedule ${view.schedule.name} created`);
    void schedules?.refresh();
  });
  document.body.append(scheduleDialog.dialog);
  return scheduleDialog;
}

async function openNewSchedule(): Promise<void> {
  try {
    info = await bridge.info();
    (await newScheduleDialog()).open(info, schedules?.names());
  } catch (error) {
    showError(error);
  }
}

function onEvent(event: BridgeEvent): void {
  notifier.onEvent(event);
  // A fire's task changed (or a new picture): the open schedules show its state.
  if (!schedulesPane.hidden && (event.full || schedules?.concerns(event.tasks.map((task) => task.id)))) void schedules?.refresh();
  if (event.full) {
    tasks.clear();
    everything = true;
    connected = true;
    olderTasks.reset(event.older);
  }
  if (event.counts) counts = event.counts;
  for (const task of event.tasks) {
    tasks.set(task.id, task);
    changed.add(task.id);
    if (task.id === details.taskId) logStale = true;
  }
  for (const id of event.removed ?? []) {
    tasks.delete(id);
    everything = true;
  }
  // The task shown may be older than the picture (opened from a link, or paged in before a reconnect).
  const shown = pendingOpen ?? details.taskId;
  if (event.full && shown && !tasks.has(shown)) fetchTask(shown);
  if (event.paused !== undefined && event.paused !== paused) {
    paused = event.paused;
    list.paused = paused;
    everything = true;
  }
  scheduleRender();
}

/** The one path to the DOM: everything that changed since the last frame is drawn in the next one. */
function scheduleRender(): void {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(render);
}

/** Each render is reported as a User Timing measure (observable, e.g. by the load test); the buffer is not kept. */
const RENDER_MEASURE = 'backchannel:render';

function render(): void {
  frameRequested = false;
  const started = performance.now();
  try {
    renderNow();
  } finally {
    performance.measure(RENDER_MEASURE, { start: started, end: performance.now() });
    performance.clearMeasures(RENDER_MEASURE);
  }
}

function renderNow(): void {
  const now = Date.now();
  const dirty = everything ? undefined : changed;
  const missingRows = list.render(tasks, dirty, now);
  // A task asked for (a new one, not listed yet) wins over the one shown.
  const selected = pendingOpen ?? details.taskId;
  if (selected) {
    const task = tasks.get(selected);
    // A run of a thread shows the thread's runs: a change to any of them (a new follow-up) redraws it.
    const threadChanged = dirty !== undefined && list.threadOf(selected)?.runs.some((run) => dirty.has(run.id)) === true;
    if (task && (!dirty || dirty.has(selected) || threadChanged || pendingOpen)) showDetails(task, now);
  }
  changed = new Set();
  everything = false;
  if (missingRows) {
    // A long history: the next frame builds the next rows (and looks at every task again).
    everything = true;
    scheduleRender();
  }
  const summary = counts ? countsSummary(counts) : countsText(tasks.values());
  setText(countsEl, connected ? summary : 'Connecting…');
  document.title = `Backchannel — ${summary}`;
  if (connected) emptyEl.hidden = tasks.size > 0;
  listEl.hidden = tasks.size === 0;
  pauseButton.setAttribute('aria-pressed', String(paused));
  setText(pauseButton, paused ? 'Resume queue' : 'Pause queue');
  pausedBanner.hidden = !paused;
  app.dataset.ready = connected ? 'true' : 'false';
}

/* ---------- details and routing (#task=<id>, so reload and notifications can open a task) ---------- */

let pendingOpen: string | undefined;

function openTask(id: string): void {
  review.hide();
  details.root.hidden = false;
  if (location.hash !== `#task=${encodeURIComponent(id)}`) history.replaceState(null, '', `#task=${encodeURIComponent(id)}`);
  pendingOpen = id;
  list.selectedId = id;
  const task = tasks.get(id);
  if (task) showDetails(task, Date.now());
  // Not among the tasks the panel holds (an old one, by its link): asked for; a new one comes by event too.
  else fetchTask(id);
  scheduleRender();
}

/** Adds task `id` to the list from the hub, unless an event brings it first; an unknown id stays pending. */
function fetchTask(id: string): void {
  bridge.getTask(id).then(
    ({ task }) => {
      if (tasks.has(task.id)) return;
      tasks.set(task.id, task);
      changed.add(task.id);
      scheduleRender();
    },
    () => {},
  );
}

function showDetails(task: TaskSnapshot, now: number): void {
  const first = details.taskId !== task.id;
  details.show(task, now);
  pendingOpen = undefined;
  if (first) {
    detailsPane.hidden = false;
    app.classList.add('has-details');
    details.setLog(undefined);
    logStale = true;
    void refreshLog();
    details.root.focus({ preventScroll: true });
  }
}

/** The combined review of the marked tasks, in the details pane in place of one task's details. */
function openReview(ids: string[]): void {
  pendingOpen = undefined;
  list.selectedId = undefined;
  details.reset();
  details.root.hidden = true;
  detailsPane.hidden = false;
  app.classList.add('has-details');
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  void review.open(ids, tasks);
  review.root.focus({ preventScroll: true });
  scheduleRender();
}

function closeTask(): void {
  review.hide();
  details.root.hidden = false;
  pendingOpen = undefined;
  list.selectedId = undefined;
  detailsPane.hidden = true;
  app.classList.remove('has-details');
  history.replaceState(null, '', location.pathname + location.search);
  list.focusList();
  details.reset();
  scheduleRender();
}

async function refreshLog(): Promise<void> {
  const id = details.taskId;
  if (!id || !logStale || detailsPane.hidden) return;
  logStale = false;
  try {
    const result = await bridge.getTask(id);
    if (details.taskId === id) details.setLog(result.log);
  } catch (error) {
    showError(error);
  }
}

function routeFromHash(): void {
  if (location.hash === '#insights') return showInsights(true);
  if (location.hash === '#schedules') return showSchedules(true);
  const match = /^#task=(.+)$/.exec(location.hash);
  if (match?.[1]) openTask(decodeURIComponent(match[1]));
}

/* ---------- insights (#insights) ---------- */

/** Insights take the place of the task list and details; their figures refresh while they show. */
function showInsights(show: boolean): void {
  if (show) showSchedules(false);
  insightsPane.hidden = !show;
  byId('app').classList.toggle('showing-insights', show);
  insightsButton.setAttribute('aria-pressed', String(show));
  if (show) {
    if (location.hash !== '#insights') history.replaceState(null, '', '#insights');
    insightsView().then((view) => !insightsPane.hidden && void view.refresh(), showError);
  } else {
    insights?.hide();
    if (location.hash === '#insights') history.replaceState(null, '', location.pathname + location.search);
  }
}

/* ---------- schedules (#schedules) ---------- */

/** Schedules take the place of the task list and details (as insights do); they refresh while they show. */
function showSchedules(show: boolean): void {
  if (show) showInsights(false);
  schedulesPane.hidden = !show;
  app.classList.toggle('showing-schedules', show);
  schedulesButton.setAttribute('aria-pressed', String(show));
  if (show) {
    if (location.hash !== '#schedules') history.replaceState(null, '', '#schedules');
    schedulesView().then((view) => !schedulesPane.hidden && void view.refresh(), showError);
  } else if (location.hash === '#schedules') history.replaceState(null, '', location.pathname + location.search);
}

/* ---------- actions ---------- */

function cancelTask(id: string): void {
  const task = tasks.get(id);
  if (task && isFinished(task.state)) return;
  bridge.cancel(id).then(() => toast(`Cancelling ${task?.label ?? 'task'}`), showError);
}

function retryTask(id: string): void {
  const task = tasks.get(id);
  if (task && !isFinished(task.state)) return;
  bridge.retry(id).then(({ id: newId }) => {
    toast('Started again as a new task');
    openTask(newId);
  }, showError);
}

async function openNewTask(): Promise<void> {
  try {
    info = await bridge.info();
    (await newTaskDialog()).open(info);
  } catch (error) {
    showError(error);
  }
}

/** The New task dialog as a follow-up of a finished coding task: in its worktree, with a new input. */
async function openFollowUp(task: TaskSnapshot): Promise<void> {
  try {
    info = await bridge.info();
    (await newTaskDialog()).openFollowUp(info, task);
  } catch (error) {
    showError(error);
  }
}

/* ---------- wiring ---------- */

byId('new-task').addEventListener('click', () => void openNewTask());
insightsButton.addEventListener('click', () => showInsights(insightsPane.hidden));
schedulesButton.addEventListener('click', () => showSchedules(schedulesPane.hidden));
byId('empty-new-task').addEventListener('click', () => void openNewTask());
pauseButton.addEventListener('click', () => {
  bridge.setPaused(!paused).catch(showError);
});
byId('open-log').addEventListener('click', () => {
  // Headless, the server shows the log as a page (there is no OS viewer to hand it to).
  if (info?.mode === 'headless') window.open(`./log${location.search}`, '_blank', 'noopener');
  else bridge.openLog().catch(showError);
});

document.addEventListener('keydown', (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target as HTMLElement;
  const typing = target.closest('input, textarea, select, [contenteditable="true"]') !== null;
  const dialogOpen = dialog?.dialog.open === true || scheduleDialog?.dialog.open === true;
  if (event.key === 'Escape' && !dialogOpen && (details.taskId || review.shown)) {
    closeTask();
    event.preventDefault();
    return;
  }
  if (typing || dialogOpen) return;
  const inDetails = detailsPane.contains(target);
  switch (event.key) {
    case 'n':
      event.preventDefault();
      void openNewTask();
      break;
    case 'p':
      pauseButton.click();
      break;
    case 'i':
      insightsButton.click();
      break;
    case 's':
      schedulesButton.click();
      break;
    case 'c':
    case 'r':
      if (inDetails && details.taskId) {
        if (event.key === 'c') cancelTask(details.taskId);
        else retryTask(details.taskId);
      }
      break;
    case '/':
      event.preventDefault();
      list.focusList();
      break;
    default:
      break;
  }
});

window.addEventListener('hashchange', routeFromHash);
setInterval(() => {
  const now = Date.now();
  list.tick(now);
  details.tick(now);
  void refreshLog();
}, LOG_REFRESH_MS);
setInterval(() => !insightsPane.hidden && void insights?.refresh(), INSIGHTS_REFRESH_MS);
setInterval(() => !schedulesPane.hidden && void schedules?.refresh(), SCHEDULES_REFRESH_MS);

/* ---------- start: first paint from pages, then the event stream ---------- */

/**
 * The first paint comes from two small pages asked for at once — every live task, and the newest
 * TASK_PAGE_SIZE of all — not from the event stream, whose first event is the full picture: with
 * 1,000 tasks in history that is ~0.6 MB the hub builds and the page parses before any row shows
 * (docs/performance.md § the panel's first paint over a big history). Once those rows are on screen
 * the stream opens; its full picture (live tasks and the newest page again, bounded however long the
 * history is: docs/performance.md § How cost grows with history) replaces them, so nothing the
 * pages missed or got stale stays wrong. Older tasks come a page at a time (OlderTasks).
 */
function start(): void {
  firstPages.then(
    ([live, newest]) => {
      if (connected) return; // the full picture came first
      for (const task of [...live.tasks, ...newest.tasks]) tasks.set(task.id, task);
      olderTasks.reset(newest.next);
      everything = true;
      scheduleRender();
      afterPaint(goLive);
    },
    () => goLive(), // the stream says what is wrong (or brings the tasks after all)
  );
}

/** Calls `fn` once the next frame has been painted; at once while the page is hidden (no frames then). */
function afterPaint(fn: () => void): void {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    fn();
  };
  if (document.hidden) return once();
  requestAnimationFrame(() => setTimeout(once, 0));
  setTimeout(once, 250);
}

let live = false;
/** Opens the event stream and asks for what the panel shows besides tasks. */
function goLive(): void {
  if (live) return;
  live = true;
  bridge.subscribe(onEvent);
  bridge
    .info()
    .then((value) => {
      info = value;
      notifier.offer(value.mode);
      paused = value.paused;
      list.paused = paused;
      setText(byId('mode'), value.mode === 'electron' ? `Backchannel ${value.version}` : `Backchannel ${value.version} (headless)`);
      setText(byId('log-path'), value.logPath);
      scheduleRender();
    })
    .catch((error: unknown) => {
      // Typically a missing or stale token (the server was restarted): say so where it stays visible.
      connected = false;
      setText(byId('empty-title'), 'Cannot reach Backchannel');
      setText(byId('empty-text'), error instanceof Error ? error.message : String(error));
      emptyEl.hidden = false;
      showError(error);
    });
  refreshFleet();
  setInterval(refreshFleet, FLEET_REFRESH_MS);
  // The views no first paint needs, ready before they are asked for (a failure is retried then).
  // Not every browser the headless panel is opened in has requestIdleCallback (Safari).
  const preload = (): void => void loadViews().catch(() => {});
  if ('requestIdleCallback' in window) requestIdleCallback(preload, { timeout: 1000 });
  else setTimeout(preload, 200);
}

start();
routeFromHash();
scheduleRender();

/** The workers of a Redis queue, in the footer; hidden when tasks run locally. */
function refreshFleet(): void {
  bridge.fleet().then(
    (workers) => {
      fleetEl.hidden = workers.length === 0;
      const text = workers.map((w) => `${w.name} ${w.running}/${w.concurrency} · ${(w.heartbeatAgeMs / 1000).toFixed(1)} s`).join(', ');
      setText(fleetEl, `Workers: ${text}`);
    },
    () => {},
  );
}
