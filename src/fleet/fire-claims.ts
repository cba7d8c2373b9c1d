/**
 * Fire claims: hubs on one Redis that share a schedule decide each of its fires exactly once. One key
 * per schedule, `backchannel:<queue>:schedule:<name>`, holds `<fire time> <hub>`: the last fire time
 * decided and the hub that decided it (the schedule's owner). One Lua script claims a hub's planned
 * fires in order, atomically, so two hubs can never both win one fire time:
 *
 * - a fire at or before the mark was decided already: `lost` (the loser records it as run elsewhere),
 *   or `won` again by the owner itself (it claimed the fire but could not start it: it tries again);
 * - a later fire is `won` by the owner, or by any hub once the owner is `takeoverMs` late with it (the
 *   owner stopped or lost Redis), which then becomes the owner;
 * - otherwise the owner may still claim it: `wait`, and the claims after it are not looked at.
 *
 * Keeping one owner is what keeps overlap and buffer-one meaningful across hubs: the owner knows its
 * own runs. The key lives `keepMs` past its last claim (the hub gives the schedule's catch-up window
 * and a margin), so a hub back from downtime still finds which misses another hub already decided.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { RedisConnection } from 'bullmq';
import { connectionOf, DEFAULT_QUEUE_NAME, PREFIX } from './wire.js';

/**
 * 15 s: the owner ticks every second, and on a busy machine a tick (cron steps of ~15 ms each, a
 * Redis round trip) can take a few; three times that and more is an owner gone, not a slow one.
 */
export const FLEET_TAKEOVER_MS = 15_000;

/** How long close() waits for a graceful quit before cutting the connection (a hub's close never hangs on Redis). */
const CLOSE_GRACE_MS = 2_000;

/** One planned fire, or a run of skipped ones (`through` its last time). */
export interface FireSpan {
  readonly at: number;
  readonly through: number;
}

export type FireVerdict = 'won' | 'lost' | 'wait';

export interface ClaimResult {
  /** One verdict per span, in order, ending at the first `wait` (later spans were not claimed). */
  readonly verdicts: readonly FireVerdict[];
  /** The schedule's owner before this claim (the hub a `lost` fire went to); '' when it had none. */
  readonly owner: string;
}

/** What the hub's scheduler needs of a fleet to claim fires (tests may give another implementation). */
export interface FireClaims {
  /** This hub's id on the fleet: host, pid and a random part. */
  readonly hub: string;
  claim(schedule: string, spans: readonly FireSpan[], now: number, keepMs: number): Promise<ClaimResult>;
  close(): Promise<void>;
}

export interface FireClaimsOptions {
  /** `redis://…`, the hub's fleet Redis. */
  redis: string;
  /** The fleet's queue name; hubs on one queue share claims. @default 'agents' */
  name?: string;
  tls?: Record<string, unknown>;
  /** @default FLEET_TAKEOVER_MS */
  takeoverMs?: number;
  /** @default `<host>:<pid>:<random>` */
  hub?: string;
}

// KEYS[1]: the schedule's key. ARGV: hub, now, takeoverMs, keepMs, then at/through pairs.
// Returns {previous owner, verdict…}. Times travel as strings and are compared as numbers (epoch ms
// are exact in Lua's doubles); the mark is stored as the string it came in as.
const CLAIM_SCRIPT = `
local hub = ARGV[1]
local now = tonumber(ARGV[2])
local takeover = tonumber(ARGV[3])
local mark, markText, owner = -1, nil, nil
local current = redis.call('GET', KEYS[1])
if current then
  local sep = string.find(current, ' ', 1, true)
  if sep then
    markText = string.sub(current, 1, sep - 1)
    mark = tonumber(markText) or -1
    owner = string.sub(current, sep + 1)
  end
end
local previous = owner or ''
local out = {previous}
local won = false
for i = 5, #ARGV, 2 do
  local at = tonumber(ARGV[i])
  if at <= mark and owner == hub then
    table.insert(out, 'won')
  elseif at <= mark then
    table.insert(out, 'lost')
  elseif owner ~= nil and owner ~= hub and now - at < takeover then
    table.insert(out, 'wait')
    break
  else
    mark = tonumber(ARGV[i + 1])
    markText = ARGV[i + 1]
    owner = hub
    won = true
    table.insert(out, 'won')
  end
end
if won then redis.call('SET', KEYS[1], markText .. ' ' .. hub, 'PX', ARGV[4]) end
return out
`;

class RedisFireClaims implements FireClaims {
  readonly hub: string;
  private readonly connection: RedisConnection;
  private readonly prefix: string;
  private readonly takeoverMs: number;
  /** Rejects every claim still waiting once close() is called (a claim waits for Redis as long as it is away). */
  private readonly closed: Promise<never>;
  private closeClaims: (error: Error) => void = () => {};

  constructor(options: FireClaimsOptions) {
    this.hub = options.hub ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.takeoverMs = options.takeoverMs ?? FLEET_TAKEOVER_MS;
    this.prefix = `${PREFIX}:${options.name ?? DEFAULT_QUEUE_NAME}:schedule:`;
    this.connection = new RedisConnection(connectionOf(options.redis, options.tls), { shared: false });
    // Connection errors are retried by ioredis; without a listener they would crash the process.
    this.connection.on('error', () => {});
    this.closed = new Promise<never>((_, reject) => (this.closeClaims = reject));
    this.closed.catch(() => {});
  }

  async claim(schedule: string, spans: readonly FireSpan[], now: number, keepMs: number): Promise<ClaimResult> {
    if (spans.length === 0) return { verdicts: [], owner: '' };
    const client = await Promise.race([this.connection.client, this.closed]);
    const args = [this.hub, String(now), String(this.takeoverMs), String(Math.max(1, Math.ceil(keepMs)))];
    for (const span of spans) args.push(String(span.at), String(span.through));
    const claimed = client.eval(CLAIM_SCRIPT, 1, this.prefix + schedule, ...args) as Promise<string[]>;
    const [owner, ...verdicts] = await Promise.race([claimed, this.closed]);
    return { owner: owner ?? '', verdicts: verdicts as FireVerdict[] };
  }

  /** Closes the connection; past CLOSE_GRACE_MS (Redis away, a claim still waiting on it) it is cut instead. */
  async close(): Promise<void> {
    this.closeClaims(new Error('the fire claims were closed'));
    const graceful = this.connection.close().then(
      () => true,
      () => false,
    );
    const timer = new Promise<false>((resolve) => setTimeout(() => resolve(false), CLOSE_GRACE_MS).unref());
    if (await Promise.race([graceful, timer])) return;
    await this.connection.disconnect(false).catch(() => {});
  }
}

/** The fire claims of a hub whose runs go to the fleet on `redis` (docs/schedules.md, "On a fleet"). */
export function redisFireClaims(options: FireClaimsOptions): FireClaims {
  return new RedisFireClaims(options);
}
