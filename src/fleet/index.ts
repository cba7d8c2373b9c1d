/** Scale-out over BullMQ and Redis: the broker's Redis queue and the worker that serves it (docs/scale-out.md). */
export { redisQueue, type RedisQueueOptions } from './redis-queue.js';
export {
  FLEET_TAKEOVER_MS,
  redisFireClaims,
  type ClaimResult,
  type FireClaims,
  type FireClaimsOptions,
  type FireSpan,
  type FireVerdict,
} from './fire-claims.js';
export { FleetWorker, type FleetWorkerOptions } from './worker.js';
export { takeRedisUrl, redactedUrl, REDIS_PASSWORD_ENV, REDIS_URL_ENV } from './redis-url.js';
export { AllowList, type AllowedCommand } from './allow-list.js';
export type { WorkerInfo } from '../model/fleet.js';
