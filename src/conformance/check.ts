/**
 * `backchannel check`: runs a sub-agent under the scenarios (./scenarios.ts) with a real broker in
 * a private directory, runs shared by several scenarios once, all runs at once, and returns the
 * report card.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TaskBroker } from '../broker/broker.js';
import { observe, type AgentUnderTest, type Observation } from './observe.js';
import { CANCEL_GRACE_MS, KILL_GRACE_MS, SCENARIOS, tooBusy, type Scenario, type Verdict } from './scenarios.js';

export interface ScenarioResult {
  name: string;
  rule: string;
  verdict: Verdict;
}

export interface ReportCard {
  agent: string;
  results: ScenarioResult[];
  passed: number;
  failed: number;
  warnings: number;
  /** Scenarios whose timing a busy machine spoilt: neither passed nor failed (run again when it is quieter). */
  unjudged: number;
}

export const SCENARIO_NAMES = SCENARIOS.map((s) => s.name);

/** Runs `only` (default: every scenario) against the agent. */
export async function checkAgent(agent: AgentUnderTest, only: readonly string[] = SCENARIO_NAMES): Promise<ReportCard> {
  const scenarios = SCENARIOS.filter((s) => only.includes(s.name));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-check-'));
  const broker = new TaskBroker({
    ipcDir: path.join(dir, 'ipc'),
    cancelGraceMs: CANCEL_GRACE_MS,
    killGraceMs: KILL_GRACE_MS,
    traceLines: true,
    concurrency: 8,
    // The verdicts time the agent (heartbeats, the cancel grace): it runs as a program of its own would.
    agentCpu: 'full',
  });
  try {
    await broker.ready;
    const plans = new Map(scenarios.flatMap((s) => Object.entries(s.runs)));
    const observed = new Map<string, Observation>();
    await Promise.all([...plans].map(async ([key, plan]) => observed.set(key, await observe(broker, agent, plan))));
    const results = scenarios.map((scenario) => ({
      name: scenario.name,
      rule: scenario.rule,
      verdict: judge(scenario, observed, agent.timeoutMs),
    }));
    const count = (status: Verdict['status']): number => results.filter((r) => r.verdict.status === status).length;
    return {
      agent: [agent.command, ...agent.args].join(' '),
      results,
      passed: count('pass'),
      failed: count('fail'),
      warnings: count('warn'),
      unjudged: count('unjudged'),
    };
  } finally {
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One scenario's verdict on the runs observed for it. */
export function judge(scenario: Scenario, observed: Map<string, Observation>, timeoutMs: number): Verdict {
  const runs = Object.fromEntries(Object.keys(scenario.runs).map((key) => [key, observed.get(key)!]));
  // A run cut off by the check's own deadline while the machine was too busy says nothing of the agent.
  for (const run of Object.values(runs)) {
    const busy = run.snapshot.reason === 'timeout' ? tooBusy(run.load) : undefined;
    if (busy)
      return { status: 'unjudged', detail: `could not judge (machine too busy): the run hit the ${timeoutMs} ms deadline while ${busy}` };
  }
  try {
    return scenario.judge(runs);
  } catch (error) {
    return { status: 'fail', detail: `could not judge: ${(error as Error).message}` };
  }
}

const MARK: Record<Verdict['status'], string> = { pass: '✓', fail: '✗', warn: '!', unjudged: '?' };

/** What goes before a verdict's detail (an unjudged verdict's detail says so itself). */
const LABEL: Record<Verdict['status'], string> = { pass: '', fail: 'fail: ', warn: 'warn: ', unjudged: '' };

/** The rules name the hand-off variables; their names read as Cursor's own to everyone else, so one line says why. */
export const CURSOR_NAMES =
  'CURSOR_TASK_ID, CURSOR_IPC_PATH and the other CURSOR_* variables are the hand-off of every sub-agent, whatever tool runs it: the names come from the design Backchannel was built from.';

export function formatReport(card: ReportCard): string {
  const width = Math.max(...card.results.map((r) => r.name.length));
  const lines = [`backchannel check: ${card.agent}`, ''];
  for (const { name, rule, verdict } of card.results) {
    lines.push(`${MARK[verdict.status]} ${name.padEnd(width)}  ${rule}`);
    if (verdict.detail) lines.push(`  ${' '.repeat(width)}  ${LABEL[verdict.status]}${verdict.detail}`);
    if (verdict.status !== 'pass' && verdict.line) lines.push(`  ${' '.repeat(width)}  line: ${verdict.line}`);
  }
  const unjudged = card.unjudged > 0 ? `, ${card.unjudged} could not be judged (machine too busy: run again)` : '';
  lines.push('', CURSOR_NAMES);
  lines.push('', `${card.passed} passed, ${card.failed} failed, ${card.warnings} warning(s)${unjudged}`);
  return lines.join('\n') + '\n';
}
