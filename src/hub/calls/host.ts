/** The hub's calls about itself: what it is and offers (`info`, with its recent commands), its log, its fleet and its figures. */
import type { BackchannelBridge, BridgeInfo, PresetInfo } from '../../bridge/contract.js';
import { BridgeError } from '../../model/errors.js';
import { TASK_PAGE_SIZE, type CommandLine } from '../../model/task.js';
import type { BrokerLike } from '../broker-like.js';
import { distinctCommands } from '../recent-commands.js';

/** What the host calls answer with besides the broker's own figures. */
export interface HostFacts {
  mode: BridgeInfo['mode'];
  version: string;
  logPath: string;
  presets?: PresetInfo[];
  /** How many distinct recent command lines `info()` lists. @default 8 */
  recentLimit?: number;
  /** Electron opens the log in the OS; headless leaves it undefined and only returns the path. */
  openLog?: (path: string) => Promise<void>;
}

export function hostCalls(broker: BrokerLike, facts: HostFacts): Pick<BackchannelBridge, 'info' | 'openLog' | 'fleet' | 'insights'> {
  const recentLimit = facts.recentLimit ?? 8;
  return {
    async info() {
      return {
        version: facts.version,
        mode: facts.mode,
        logPath: facts.logPath,
        paused: broker.paused,
        presets: facts.presets ?? [],
        recent: distinctCommands(newestCommandLines(broker), recentLimit),
        ...(broker.connections ? { connections: broker.connections() } : {}),
      };
    },
    async openLog() {
      await facts.openLog?.(facts.logPath);
      return { path: facts.logPath };
    },
    async fleet() {
      return (await broker.fleet?.()) ?? [];
    },
    async insights(query) {
      if (!broker.insights) throw new BridgeError('internal', 'This broker keeps no insights');
      return broker.insights(query);
    },
  };
}

/** How many of the newest tasks `info()` looks through for recent command lines (five pages). */
const RECENT_SCAN = 5 * TASK_PAGE_SIZE;

/**
 * What the newest tasks ran, newest first, read only as far as `info`'s recent commands need: from
 * the broker in place where it can, else page by page (else from `tasks()`). A history of one
 * command line used to be walked whole, every snapshot copied, for each `info()` (3 s over 100,000
 * tasks, during which no panel painted); then five pages were copied (most of a busy hub's garbage).
 */
function* newestCommandLines(broker: BrokerLike): Iterable<CommandLine> {
  if (broker.newestCommandLines) return yield* broker.newestCommandLines(RECENT_SCAN);
  if (!broker.taskPage) return yield* [...broker.tasks()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  for (let before: string | undefined, seen = 0; seen < RECENT_SCAN;) {
    const page = broker.taskPage(before === undefined ? { limit: TASK_PAGE_SIZE } : { limit: TASK_PAGE_SIZE, before });
    yield* page.tasks;
    seen += page.tasks.length;
    if (page.next === undefined) return;
    before = page.next;
  }
}
