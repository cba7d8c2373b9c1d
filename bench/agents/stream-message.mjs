// The figure-3 workload, shared by every sender: `count` partial payloads of ~200 bytes, produced in
// bursts of `burst` per event-loop tick (a chatty agent reporting from a loop that yields).
export const wallNow = () => performance.timeOrigin + performance.now();
export const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
/** Baseline senders use an id as long as a broker task id (UUID v7), so the lines are the same size. */
export const BASELINE_TASK_ID = '01a22bed-ad26-779a-897e-018db26b0390';
const STEP = 'reading src/components/editor/very/deep/path/file-name.tsx (token 0123456789abcdef)';

/** The `data` of message i (the first also carries the sender's start time). */
export function partialData(i, sentAt) {
  const data = { progress: Math.floor((i * 100) / 200000), i, step: STEP };
  if (sentAt !== undefined) data.sent_at = sentAt;
  return data;
}

export function message(taskId, i, sentAt) {
  return { task_id: taskId, status: 'partial', data: partialData(i, sentAt) };
}

/** Calls `emit(i, sentAt)` for every message, yielding to the event loop after each burst. */
export async function produce(count, burst, emit) {
  const sentAt = wallNow();
  for (let i = 0; i < count; i++) {
    emit(i, i === 0 ? sentAt : undefined);
    if ((i + 1) % burst === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}
