/**
 * Fire claims: hubs on one Redis that share a schedule decide each of its fires exactly once. One key
 * per schedule, `backchannel:<queue>:schedule:<name>`, holds `<mark> <seen> <owner>`: the last fire
 * time decided, when its owner last claimed (Redis's clock, so the hubs' clocks never disagree about
 * it), and the hub that owns the schedule. The owner claims on every tick, due fires or not (its
 * heartbeat). One Lua script claims a hub's planned fires in order, atomically:
 *
 * - a fire at or before the mark that another hub decided: `lost` (recorded here as `elsewhere`);
 * - while another hub owns the schedule and claimed within `takeoverMs`, a later fire: `wait` (the
 *   owner decides it; the claims after it are not looked at, and it is planned again next tick);
 * - otherwise `won`: this hub is (or now becomes) the owner, and decides it. The owner wins a fire at
 *   or before its own mark again: it claimed it but could not start it, and tries again.
 *
 * One owner at a time keeps overlap and buffer-one meaningful (the owner knows its own runs), and a
 * hub whose fire times differ (an `everyMs` schedule added at another moment) never fires beside the
 * owner: its fires wait until the owner's mark passes them. The key lives `keepMs` past its last
 * claim (the hub gives the schedule's catch-up window and a margin), so a hub back from downtime
 * still finds which misses another hub already decided.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { FleetConnection } from './connection.js';
import { connectionOf, DEFAULT_QUEUE_NAME, PREFIX } from './wire.js';

/**
 * 15 s: the owner claims every second, and on a busy machine a tick (cron steps of ~15 ms each, a
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
  /** Claims the spans (none: only the owner's heartbeat) of one schedule. */
  claim(schedule: string, spans: readonly FireSpan[], keepMs: number): Promise<ClaimResult>;
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

// KEYS[1]: the schedule's key. ARGV: hub, takeoverMs, keepMs, then at/through pairs.
// Returns {owner before, verdict…}. Fire times travel as strings and are compared as numbers (epoch
// ms are exact in Lua's doubles); the mark is stored as the string it came in as.
const CLAIM_SCRIPT = `
local hub = ARGV[1]
local takeover = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local mark, markText, seen, owner = -1, '-1', 0, nil
local current = redis.call('GET', KEYS[1])
if current then
  local m, s, o = string.match(current, '^(%S+) (%S+) (.+)$')
  if m then
    markText = m
    mark = tonumber(m) or -1
    seen = tonumber(s) or 0
    owner = o
  end
end
local alive = owner ~= nil and owner ~= hub and now - seen < takeover
local out = {owner or ''}
for i = 4, #ARGV, 2 do
  local at = tonumber(ARGV[i])
  if at <= mark and owner ~= hub then
    table.insert(out, 'lost')
  elseif alive then
    table.insert(out, 'wait')
    break
  else
    local through = tonumber(ARGV[i + 1])
    if through > mark then
      mark = through
      markText = ARGV[i + 1]
    end
    table.insert(out, 'won')
  end
end
if not alive then redis.call('SET', KEYS[1], markText .. ' ' .. string.format('%d', now) .. ' ' .. hub, 'PX', ARGV[3]) end
return out
`;

class RedisFireClaims implements FireClaims {
  readonly hub: string;
  private readonly connection: FleetConnection;
  private readonly prefix: string;
  private readonly takeoverMs: number;
  /** Rejects every claim still waiting once close() is called (a claim waits for Redis as long as it is away). */
  private readonly closed: Promise<never>;
  private closeClaims: (error: Error) => void = () => {};

  constructor(options: FireClaimsOptions) {
    this.hub = options.hub ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.takeoverMs = options.takeoverMs ?? FLEET_TAKEOVER_MS;
    this.prefix = `${PREFIX}:${options.name ?? DEFAULT_QUEUE_NAME}:schedule:`;
    this.connection = new FleetConnection(connectionOf(options.redis, options.tls), { shared: false });
    // Connection errors are retried by ioredis; without a listener they would crash the process.
    this.connection.on('error', () => {});
    this.closed = new Promise<never>((_, reject) => (this.closeClaims = reject));
    this.closed.catch(() => {});
  }

  async claim(schedule: string, spans: readonly FireSpan[], keepMs: number): Promise<ClaimResult> {
    const client = await Promise.race([this.connection.client, this.closed]);
    const args = [this.hub, String(this.takeoverMs), String(Math.max(1, Math.ceil(keepMs)))];
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
