/**
 * A schedule is checked one way (src/schedules/schedule.ts, zod/mini, the repository's one message
 * template): the hub's scheduler and the store (`parseSchedule`), the panel's API and the control
 * endpoint — so MCP too — (`addSchedule`'s argument in the bridge's route table) and the CLI
 * (`scheduleRequestProblem`) refuse the same input in the same one line.
 */
import { describe, expect, test } from 'vitest';
import { checkArgs } from '../../src/bridge/calls.js';
import { parseSchedule, scheduleRequestProblem } from '../../src/schedules/schedule.js';

const BASE = { name: 'nightly', everyMs: 60_000, command: ['true'] };

/** The one line each door refuses `fields` with. */
function refusals(fields: Record<string, unknown>): { hub: string; request?: string; bridge: string } {
  const hub = parseSchedule({ ...fields, createdAt: 0 });
  let bridge = 'accepted';
  try {
    checkArgs('addSchedule', [fields]);
  } catch (error) {
    bridge = (error as Error).message;
  }
  return { hub: hub.ok ? 'accepted' : hub.message, request: scheduleRequestProblem(fields), bridge };
}

describe('one schedule shape', () => {
  test.each([
    [{ ...BASE, cron: '0 3 * * *' }, 'invalid schedule: a schedule has exactly one of --cron and --every'],
    [{ ...BASE, preset: 'p' }, 'invalid schedule: a schedule runs exactly one of a command and --preset'],
    [{ ...BASE, tz: 'UTC' }, 'invalid schedule: --tz only applies to --cron'],
    [{ ...BASE, everyMs: 10 }, 'invalid schedule: Expected `everyMs` to be an integer of at least 1000, got `10` (number)'],
    [
      { ...BASE, overlap: 'queue' },
      'invalid schedule: Expected `overlap` to be one of skip, buffer-one, cancel-other, allow, got `queue` (string)',
    ],
    [{ ...BASE, command: [] }, 'invalid schedule: Expected `command` to be a command line of at least one word, got an array'],
    [{ ...BASE, command: ['ok', 3] }, 'invalid schedule: Expected `command[1]` to be a string, got `3` (number)'],
    [{ ...BASE, maxCostUsd: -1 }, 'invalid schedule: Expected `maxCostUsd` to be a positive number, got `-1` (number)'],
    [{ ...BASE, acp: { agent: 'a', extra: 1 } }, 'invalid schedule: Unexpected `acp.extra`'],
    [
      { ...BASE, name: '../x' },
      'invalid schedule: a schedule name is 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit',
    ],
  ])('%j: the same one line at every door', (fields, message) => {
    expect(refusals(fields)).toEqual({ hub: message, request: message, bridge: message });
  });

  test('a good request passes every door; the bridge drops createdAt and passes the fields as given (the hub fills in defaults)', () => {
    expect(refusals(BASE)).toEqual({ hub: 'accepted', request: undefined, bridge: 'accepted' });
    expect(checkArgs('addSchedule', [{ ...BASE, createdAt: 5 }])).toEqual([BASE]);
    const parsed = parseSchedule({ ...BASE, createdAt: 5 });
    expect(parsed.ok && parsed.schedule).toMatchObject({ overlap: 'skip', catchUp: 'latest', paused: false, createdAt: 5 });
  });

  test('a request that is not an object says so', () => {
    expect(() => checkArgs('addSchedule', ['nightly'])).toThrow('Expected the schedule to be an object, got `nightly` (string)');
  });
});
