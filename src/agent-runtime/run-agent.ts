import { AgentTask, type ConnectTaskOptions } from './task.js';

export interface RunAgentOptions extends ConnectTaskOptions {
  /**
   * Exit the process this long after the final payload is delivered, even if the handler left
   * timers or sockets open. `false` leaves the process alone. @default 1000
   */
  exitAfterMs?: number | false;
}

/**
 * Runs a sub-agent: connects, waits for the input, calls `handler`, and turns its return value into a
 * `success` payload, a throw into `error` (or `cancelled` after a cancel), with timing in `meta`.
 *
 * ```ts
 * runAgent(async (task) => {
 *   task.progress(50, { step: 'halfway' });
 *   return { answer: 42 };
 * });
 * ```
 */
export async function runAgent<Input = unknown, Output = unknown>(
  handler: (task: AgentTask<Input>) => Promise<Output> | Output,
  options: RunAgentOptions = {},
): Promise<void> {
  let task: AgentTask<Input>;
  try {
    task = await AgentTask.connect<Input>(options);
  } catch (error) {
    process.stderr.write(`[backchannel] ${(error as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  try {
    const data = await handler(task);
    if (task.signal.aborted) await task.cancelled();
    else await task.succeed(data ?? null);
    process.exitCode = 0;
  } catch (error) {
    if (task.signal.aborted) await task.cancelled();
    else await task.fail(error);
    process.exitCode = task.signal.aborted ? 130 : 1;
  }
  await task.close();
  const exitAfter = options.exitAfterMs ?? 1000;
  if (exitAfter !== false) setTimeout(() => process.exit(), exitAfter).unref();
}
