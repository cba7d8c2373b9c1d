#!/usr/bin/env node
// A real Backchannel broker (the repository's built dist/), driven by the pytest suite over stdio:
// one JSON command per stdin line, one JSON event per stdout line. Options: argv[2] as JSON
// ({ ipcDir, dataDir, askTimeoutMs, cancelGraceMs }). Ends when stdin closes.
//   → {"op":"submit","ref":"r1","spec":{…TaskSpec…}}        ← {"ev":"submitted","ref":"r1","id":"…"}
//   → {"op":"answer","id","askId","answer"}                  ← {"ev":"update",…TaskUpdate, question?, snapshot?}
//   → {"op":"answerToolCall","id","callId","answer"}          ← {"ev":"answered","id","callId","ok"}
//   → {"op":"get","id"}                                       ← {"ev":"snapshot","id","snapshot"}
//   → {"op":"cancel","id","reason"}                          ← {"ev":"ready"} once, {"ev":"closed"} at the end
// 'ended' and 'exited' updates carry the task's snapshot (with its whole result), 'exited' its log lines too.
import { createInterface } from 'node:readline';
import { TaskBroker, silentLogger } from '../../../dist/broker/index.js';

const options = JSON.parse(process.argv[2] ?? '{}');
const broker = new TaskBroker({ logger: silentLogger, ...options });
const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');

broker.on('update', (update) => {
  const snapshot = broker.get(update.taskId);
  const event = { ev: 'update', ...update };
  if (update.kind === 'ask') event.question = snapshot?.pendingQuestion;
  // A big result is kept on disk and summarised in snapshots: the harness reports it whole.
  const whole = (task) => (task && !task.result && task.resultSummary ? { ...task, result: broker.result(task.id) ?? undefined } : task);
  if (update.kind === 'ended' || update.kind === 'exited') event.snapshot = whole(snapshot);
  if (update.kind === 'exited') event.log = broker.logOf(update.taskId).map((line) => `${line.stream}: ${line.text}`);
  emit(event);
});

await broker.ready;
emit({ ev: 'ready' });

const commands = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of commands) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  if (command.op === 'submit') {
    const handle = broker.submit(command.spec);
    handle.result.catch(() => {}); // outcomes arrive as 'ended' updates
    emit({ ev: 'submitted', ref: command.ref, id: handle.id });
  } else if (command.op === 'answer') broker.answer(command.id, command.askId, command.answer);
  else if (command.op === 'answerToolCall') {
    const ok = broker.answerToolCall(command.id, command.callId, command.answer);
    emit({ ev: 'answered', id: command.id, callId: command.callId, ok });
  } else if (command.op === 'cancel') broker.cancel(command.id, command.reason);
  else if (command.op === 'get') emit({ ev: 'snapshot', id: command.id, snapshot: broker.get(command.id) });
}
await broker.close();
emit({ ev: 'closed' });
