/** The worker fleet as the panel sees it (empty when tasks run on the local queue). */
export interface WorkerInfo {
  /** Unique name (`--name`, else host name and process id). */
  name: string;
  host: string;
  pid: number;
  /** Sub-agents it runs at once. */
  concurrency: number;
  /** Sub-agents it runs now. */
  running: number;
  /** Time since its last heartbeat; above a few seconds it is probably gone. */
  heartbeatAgeMs: number;
}
