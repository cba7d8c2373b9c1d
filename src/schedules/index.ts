/**
 * Schedules on the hub (docs/schedules.md): the shapes (schedule.ts), when a schedule fires
 * (times.ts), what is due now under its policies (plan.ts), its per-day spending cap (budget.ts) and
 * the store on disk (store.ts).
 */
export * from './schedule.js';
export { cronError, fireTimes, nextFireTime } from './times.js';
export { MAX_DUE_PER_PLAN, planFires, type FireDecision, type Plan, type PlanInput } from './plan.js';
export { ScheduleStore } from './store.js';
export { BUDGET_DAY_MS, dayCapReached, daySpend, hasDayCap, type DaySpend } from './budget.js';
