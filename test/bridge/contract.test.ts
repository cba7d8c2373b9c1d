/**
 * The bridge contract: the headless HTTP bridge and the Electron IPC bridge, both in front of the
 * same real broker, answer the same calls the same way (values, errors and events).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { BackchannelBridge, BridgeEvent } from '../../src/bridge/contract.js';
import { BridgeError } from '../../src/model/errors.js';
import { createHttpBridge } from '../../src/renderer/http-bridge.js';
import { createIpcBridge } from '../../src/bridge/ipc-client.js';
import { panelSenderCheck, registerBridgeHandlers, type RegisteredHandlers } from '../../src/desktop/ipc-handlers.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { waitFor } from '../helpers/core.js';
import { demoRequest, FakeIpc, NodeEventSource, origin, startTestHeadless, waitForTask, type TestHeadless } from '../helpers/panel.js';

const PANEL_URL = 'backchannel://panel/index.html';

let headless: TestHeadless;
let handlers: RegisteredHandlers;
let http: BackchannelBridge;
let ipc: BackchannelBridge;
let finished: TaskSnapshot;

/** A call's outcome in comparable form: the value, or the error's class, code and message. */
async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error: { bridgeError: BridgeError.is(error), code: (error as BridgeError).code, message: (error as Error).message } };
  }
}

beforeAll(async () => {
  headless = await startTestHeadless();
  const fakeIpc = new FakeIpc();
  const renderer = fakeIpc.connect(PANEL_URL);
  handlers = registerBridgeHandlers(fakeIpc, headless.bridge, {
    isTrustedSender: panelSenderCheck('backchannel://panel', () => renderer.id),
  });
  ipc = createIpcBridge(renderer);
  http = createHttpBridge({ origin: origin(headless), token: headless.server.token, EventSource: NodeEventSource });
  const { id } = await http.submit(demoRequest('progress', ['--steps=3', '--interval=20'], 'first'));
  // Succeeded and exited: the 'exited' update (exit code, no pid) must not land between the two bridges' answers.
  finished = await waitForTask(http.subscribe, (task) => task.id === id && task.state === 'succeeded' && task.exitCode !== undefined);
});

afterAll(async () => {
  handlers?.dispose();
  await headless?.stop();
});

describe('both bridges answer the same calls the same way', () => {
  const calls: [string, (bridge: BackchannelBridge) => Promise<unknown>, string | undefined][] = [
    ['info()', (b) => b.info(), undefined],
    ['listTasks()', (b) => b.listTasks(), undefined],
    ['getTask(finished)', (b) => b.getTask(finished.id), undefined],
    ['getTask(unknown)', (b) => b.getTask('no-such-task'), 'not_found'],
    ['getTask(number)', (b) => b.getTask(42 as unknown as string), 'invalid_request'],
    ['cancel(finished)', (b) => b.cancel(finished.id), 'conflict'],
    ['cancel(unknown)', (b) => b.cancel('no-such-task'), 'not_found'],
    ['retry(unknown)', (b) => b.retry('no-such-task'), 'not_found'],
    ['answer(finished) without a question', (b) => b.answer(finished.id, 'q1', 'yes'), 'conflict'],
    ['answer() with a missing ask id', (b) => b.answer(finished.id, undefined as unknown as string, 'yes'), 'invalid_request'],
    ['submit({}) without a command', (b) => b.submit({} as never), 'invalid_request'],
    ['submit() with a non-string argument', (b) => b.submit({ command: 'node', args: [1] } as never), 'invalid_request'],
    ['submit() with negative retries', (b) => b.submit({ command: 'node', retries: -1 }), 'invalid_request'],
    ['setPaused("yes")', (b) => b.setPaused('yes' as unknown as boolean), 'invalid_request'],
    ['openLog()', (b) => b.openLog(), undefined],
    ['listSchedules()', (b) => b.listSchedules(), undefined],
    ['getSchedule(unknown)', (b) => b.getSchedule('no-such-schedule'), 'not_found'],
    [
      'addSchedule() with both --cron and --every',
      (b) => b.addSchedule({ name: 'x', cron: '* * * * *', everyMs: 5000, command: ['node'] }),
      'invalid_request',
    ],
    ['setSchedulePaused(unknown)', (b) => b.setSchedulePaused('no-such-schedule', true), 'not_found'],
    ['removeSchedule(unknown)', (b) => b.removeSchedule('no-such-schedule'), 'not_found'],
    ['runScheduleNow(42)', (b) => b.runScheduleNow(42 as unknown as string), 'invalid_request'],
  ];

  test.each(calls)('%s', async (_name, call, expectedCode) => {
    const [viaHttp, viaIpc] = [await outcome(call(http)), await outcome(call(ipc))];
    expect(viaIpc).toEqual(viaHttp);
    if (expectedCode) expect(viaHttp).toMatchObject({ error: { bridgeError: true, code: expectedCode } });
    else expect(viaHttp).toHaveProperty('value');
  });

  test('getTask returns the snapshot and log of a finished task', async () => {
    const details = await http.getTask(finished.id);
    expect(details.task).toMatchObject({ id: finished.id, state: 'succeeded', label: 'first' });
    expect(details.log.some((line) => line.text.includes('demo agent started'))).toBe(true);
  });

  test('info lists the presets (the demo agents first) and the recent command', async () => {
    const info = await ipc.info();
    expect(info.mode).toBe('headless');
    expect(info.presets.map((p) => p.name)).toContain('progress');
    expect(info.recent[0]).toMatchObject({ command: finished.command, args: finished.args });
  });
});

describe('state changes made through one bridge show up in the other', () => {
  test('a schedule added over HTTP is paused over IPC and seen paused over HTTP; removed over IPC it is gone for both', async () => {
    const request = demoRequest('progress');
    const added = await http.addSchedule({ name: 'hourly', everyMs: 3_600_000, command: [request.command, ...request.args] });
    expect(added.schedule).toMatchObject({ name: 'hourly', everyMs: 3_600_000, paused: false });
    expect((await ipc.setSchedulePaused('hourly', true)).schedule.paused).toBe(true);
    const [listed] = await http.listSchedules();
    expect(listed).toMatchObject({ schedule: { name: 'hourly', paused: true }, activeRuns: 0 });
    expect(listed!.nextFireAt).toBeUndefined();
    expect(await ipc.getSchedule('hourly')).toEqual(await http.getSchedule('hourly'));
    await ipc.removeSchedule('hourly');
    expect(await http.listSchedules()).toEqual([]);
    expect(await ipc.listSchedules()).toEqual([]);
  });

  test('a task submitted over IPC and cancelled over HTTP ends cancelled for both subscribers', async () => {
    const { id } = await ipc.submit(demoRequest('forever', ['--interval=50'], 'cancel me'));
    await waitForTask(http.subscribe, (task) => task.id === id && task.state === 'running');
    // Wait for the snapshot after the process is gone (exit code known): the last one both will see.
    const ended = (task: { id: string; state: string; exitCode?: number | null }) =>
      task.id === id && task.state === 'cancelled' && task.exitCode !== undefined;
    const seenByIpc = waitForTask(ipc.subscribe, ended);
    const seenByHttp = waitForTask(http.subscribe, ended);
    await http.cancel(id);
    const [a, b] = await Promise.all([seenByIpc, seenByHttp]);
    expect(a.state).toBe('cancelled');
    expect(b).toEqual(a);
  });

  test('retry over HTTP starts a new task with the same command', async () => {
    const { id } = await http.retry(finished.id);
    expect(id).not.toBe(finished.id);
    const done = await waitForTask(ipc.subscribe, (task) => task.id === id && task.state === 'succeeded');
    expect(done).toMatchObject({ command: finished.command, args: finished.args, label: finished.label });
  });

  test('a question asked by an agent is answered over HTTP and seen over IPC', async () => {
    const { id } = await ipc.submit(demoRequest('ask'));
    const asking = await waitForTask(ipc.subscribe, (task) => task.id === id && task.pendingQuestion !== undefined);
    expect(asking.pendingQuestion).toMatchObject({ askId: 'q1', question: 'Which branch should I review?', choices: ['main', 'dev'] });
    const done = waitForTask(ipc.subscribe, (task) => task.id === id && task.state === 'succeeded');
    await http.answer(id, 'q1', 'dev');
    expect((await done).result?.data).toEqual({ branch: 'dev', error: null });
  });

  test('pausing over IPC reaches HTTP subscribers and info()', async () => {
    const events: BridgeEvent[] = [];
    const gotPaused = new Promise<void>((resolve) => {
      const unsubscribe = http.subscribe((event) => {
        events.push(event);
        if (!event.full && event.paused === true) {
          unsubscribe();
          resolve();
        }
      });
    });
    // Wait for the subscription's initial picture so the change is a separate event.
    await waitFor(() => events.length > 0, 'the initial picture');
    await ipc.setPaused(true);
    await gotPaused;
    expect((await http.info()).paused).toBe(true);
    await http.setPaused(false);
    expect((await ipc.info()).paused).toBe(false);
    expect(events[0]).toMatchObject({ full: true, paused: false });
  });

  test('every subscription starts with the full picture, the same on both bridges', async () => {
    const first = (bridge: BackchannelBridge): Promise<BridgeEvent> =>
      new Promise((resolve) => {
        const unsubscribe = bridge.subscribe((event) => {
          unsubscribe();
          resolve(event);
        });
      });
    const [a, b] = await Promise.all([first(http), first(ipc)]);
    expect(a.full).toBe(true);
    expect(b.full).toBe(true);
    expect(b.tasks.map((t) => [t.id, t.state])).toEqual(a.tasks.map((t) => [t.id, t.state]));
    expect(a.tasks.length).toBeGreaterThanOrEqual(4);
  });
});
