/**
 * Every tool both servers serve, one table of rows of ./tool-table.ts: the task tools (./tools.ts), the coding-task
 * change tools (./change-tools.ts) and the schedule tools (./schedule-tools.ts). The 2025-11-25 server (./server.ts,
 * SDK v1) and the 2026-07-28 one (./modern-server.ts, SDK v2) register this same table, each through its SDK, and
 * call every row through the same `runTool`; only `run_task`, whose answer differs by era, is registered apart.
 */
import { CHANGE_TOOLS } from './change-tools.js';
import { SCHEDULE_TOOLS } from './schedule-tools.js';
import type { McpTool } from './tool-table.js';
import { TASK_TOOLS } from './tools.js';

export const MCP_TOOLS: readonly McpTool[] = [...TASK_TOOLS, ...CHANGE_TOOLS, ...SCHEDULE_TOOLS];
