import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { panelToken, TOKEN_ENV } from '../../src/hub/headless/token.js';
import { tempDir } from '../helpers/core.js';

test('the panel token: new each start, kept in a 0600 file on request, or given by the environment', () => {
  const dataDir = tempDir();
  const env = {};
  expect(panelToken({ dataDir, env })).not.toBe(panelToken({ dataDir, env }));
  expect(fs.existsSync(path.join(dataDir, 'panel-token'))).toBe(false);
  const kept = panelToken({ dataDir, keep: true, env });
  expect(panelToken({ dataDir, keep: true, env })).toBe(kept);
  expect(fs.statSync(path.join(dataDir, 'panel-token')).mode & 0o777).toBe(0o600);
  const given = 'a'.repeat(40);
  expect(panelToken({ dataDir, keep: true, env: { [TOKEN_ENV]: given } })).toBe(given);
  expect(() => panelToken({ dataDir, env: { [TOKEN_ENV]: 'short' } })).toThrow(/at least 32 printable characters/);
});
