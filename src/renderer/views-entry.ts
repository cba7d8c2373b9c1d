/**
 * The panel's views that no first paint needs, as a file of their own (dist/renderer/views.js):
 * Insights, Schedules and the two dialogs. panel.js loads it once the first paint is on screen, or
 * at once when one of them is wanted (./lazy-views.ts). Their checks (the task request's and the
 * schedule's) are built when this file runs, not before the first paint (docs/performance.md, "Issue
 * 48, round 6: the diff panel").
 */
import { InsightsView } from './insights.js';
import { NewTaskDialog } from './new-task.js';
import { ScheduleDialog } from './schedule-form.js';
import { SchedulesView } from './schedules.js';

export const views = { InsightsView, NewTaskDialog, ScheduleDialog, SchedulesView };
export type Views = typeof views;

(window as unknown as { backchannelViews: Views }).backchannelViews = views;
