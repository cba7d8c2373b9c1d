/**
 * What the turn dispatcher (./turn.ts) and the bridged turn (./bridged-turn.ts) share: the runner's
 * options, what every turn of one runner shares, and one routed turn with what it leaves behind.
 */
import type { TaskHandle } from '../client/index.js';
import type { Clock } from '../model/clock.js';
import type { HttpError } from './http.js';
import type { GatewayConfig, ModelRoute } from './config.js';
import type { BackchannelClient, RequestTaskRunner } from './request-task/index.js';
import type { Turn } from './request.js';
import type { WorktreeTurn } from './session-worktree.js';
import type { Session, SessionRegistry } from './sessions.js';
import type { Workspaces } from './workspaces.js';
import type { TurnWriter } from './writer.js';
import type { GuardCounts } from './bridge/guard.js';
import type { BridgedRun } from './bridged-run.js';

export interface TurnRunnerOptions {
  /** Where the tasks run: the gateway's own broker, an embedding app's, or the hub's. */
  tasks: BackchannelClient;
  config: GatewayConfig;
  /** The route for a model name, or undefined (→ 404 listing `knownModels()`). */
  resolveModel(model: string): Promise<ModelRoute | undefined>;
  knownModels(): Promise<string[]>;
  /** Cap the gateway's own running tasks (a shared broker's or the hub's concurrency is not ours to set). */
  limitConcurrency: boolean;
  /** The private scratch directories: bridged runs always run in one, every session with `session_workspaces`. */
  workspaces: Workspaces;
  /** What request deadlines are measured on (a test's fake clock). @default systemClock */
  clock?: Clock;
}

/** How a model name finds its route (what a background response needs of the runner's options). */
export type ModelRouting = Pick<TurnRunnerOptions, 'config' | 'resolveModel' | 'knownModels'>;

/** The model API a turn came through: its name (the task's `api` tag) and its tool-call id prefix (bridge mode). */
export interface TurnApi {
  name: string;
  /** What the API's tool-call ids start with (`call_`, `toolu_`). */
  callIdPrefix: string;
}

/** What every turn of one runner shares. */
export interface TurnContext {
  options: TurnRunnerOptions;
  runner: RequestTaskRunner;
  registry: SessionRegistry;
  /** Bridged runs alive (running or suspended on the client's tool calls), with the session each holds. */
  bridges: Map<BridgedRun, Session | undefined>;
  guardTotals: GuardCounts;
  /** Bridged runs started since the runner was made (`/health`'s `bridge.runs`). */
  bridgedRuns: number;
  /**
   * Client call ids of bridged runs ended while waiting on them (the request timeout, the idle
   * time), with the error the client's late results get once (./bridged-turn.ts).
   */
  expiredCalls: Map<string, HttpError>;
}

/** One turn on its route, in its session (if any): what it asks the task, and where. */
export interface RoutedTurn {
  turn: Turn;
  model: string;
  route: ModelRoute;
  session: Session | undefined;
  api: TurnApi;
  abort: AbortController;
  writer: TurnWriter;
}

/** What a turn leaves for its session once it is over. */
export interface TurnOutcome {
  worktree?: WorktreeTurn;
  task?: TaskHandle;
  agentSession?: string;
  /** The text the turn answered with (what the client will send back as the assistant's turn). */
  answered?: string;
}
