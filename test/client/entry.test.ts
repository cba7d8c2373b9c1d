/**
 * The client's entry (src/client/index.ts) is the boundary every front-end crosses (a dependency rule lets them import
 * nothing else of the client): its export list is pinned here, as the MCP SDK pins its package's exports, so a name
 * that joins or leaves it is a decision made in this file. The values are read from the module itself; the declarations
 * (types included, and where each comes from) from its source.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import * as entry from '../../src/client/index.js';
import { HubLostError } from '../../src/client/hub-client.js';
import { BridgeError, errorFromBody, httpStatusOf } from '../../src/model/errors.js';
import { ROOT } from '../helpers/core.js';

const ENTRY = path.join(ROOT, 'src', 'client', 'index.ts');

/** Each `export … from` of the entry: the module and the names it passes on (`*` for all), types marked. */
function declarations(): string[] {
  const source = ts.createSourceFile(ENTRY, readFileSync(ENTRY, 'utf8'), ts.ScriptTarget.Latest);
  return source.statements.flatMap((statement) => {
    if (!ts.isExportDeclaration(statement) || !statement.moduleSpecifier) return [];
    const from = (statement.moduleSpecifier as ts.StringLiteral).text;
    const all = statement.isTypeOnly ? 'type *' : '*';
    const clause = statement.exportClause;
    const names =
      clause && ts.isNamedExports(clause)
        ? clause.elements.map((element) => (statement.isTypeOnly || element.isTypeOnly ? `type ${element.name.text}` : element.name.text))
        : [all];
    return [`${from}: ${names.join(', ')}`];
  });
}

describe("the client's entry", () => {
  test('exports exactly these values', () => {
    expect(Object.keys(entry).sort()).toEqual([
      'BridgeError',
      'BrokerError',
      'DEFAULTS',
      'FIRE_PAGE_SIZE',
      'MAX_DURATION_MS',
      'MAX_FIRE_PAGE_SIZE',
      'MAX_INPUT_BYTES',
      'NO_HUB',
      'SKIP_REASONS',
      'TaskError',
      'UntrustedEndpointError',
      'acpAgentPresets',
      'clientOf',
      'createClient',
      'createHeadlessLogger',
      'createInMemoryPair',
      'defaultWorktreeDir',
      'durationTooLong',
      'formatLimit',
      'isHubLost',
      'killTree',
      'openClient',
      'planNewWorktree',
      'readStats',
      'silentLogger',
    ]);
  });

  test('declares them, and its types, from these modules', () => {
    expect(declarations()).toEqual([
      './client.js: createClient, type BackchannelClient',
      './in-memory.js: createInMemoryPair, type InMemoryPair',
      './open.js: clientOf, NO_HUB, openClient, type OpenClientOptions, type WithoutHub',
      './tasks.js: type TaskBackend, type TaskLoad, type TaskPlace, type TaskRun',
      './changes.js: defaultWorktreeDir, type ChangeService',
      './hub-client.js: isHubLost',
      './discover.js: UntrustedEndpointError',
      './stats.js: readStats, SKIP_REASONS, type ScheduleStats, type StatsReport',
      '../model/errors.js: BridgeError, type ErrorCode',
      '../bridge/contract.js: type *',
      '../model/handle.js: type TaskHandle',
      '../model/limits.js: FIRE_PAGE_SIZE, formatLimit, MAX_FIRE_PAGE_SIZE, MAX_INPUT_BYTES',
      '../model/duration.js: durationTooLong, MAX_DURATION_MS',
      '../base/log.js: createHeadlessLogger, silentLogger, type Logger',
      '../broker/index.js: BrokerError, DEFAULTS, planNewWorktree, TaskError, type BrokerOptions, type EnvPolicy, type RunRule',
      '../base/kill-tree.js: killTree',
      '../hub/acp-agents.js: acpAgentPresets',
    ]);
  });

  test('a lost hub is a code of the one error table, so front-ends branch on `code`, not on a class', () => {
    const lost = new HubLostError('/x.sock', 'the stream closed');
    expect(entry.isHubLost(lost)).toBe(true);
    expect(lost.toBody()).toEqual({
      error: {
        code: 'hub_lost',
        message: 'The Backchannel hub (control endpoint /x.sock) is gone: the stream closed',
        data: { path: '/x.sock' },
      },
    });
    expect(httpStatusOf('hub_lost')).toBe(503);
    // Across a boundary it stays what it is (a copy of the client, JSON).
    expect(entry.isHubLost(errorFromBody(JSON.parse(JSON.stringify(lost.toBody()))))).toBe(true);
    expect(entry.isHubLost(new BridgeError('internal', 'x'))).toBe(false);
    expect(entry.isHubLost(Object.assign(new Error('gone'), { code: 'hub_lost' }))).toBe(false);
  });
});
