/** The session registry in memory: keys, LRU cap, idle TTL, in-flight sessions never evicted. */
import { describe, expect, test } from 'vitest';
import { headerSessionIds, sessionKey, SessionRegistry, type Session } from '../../src/gateway/sessions.js';

describe('session registry', () => {
  test("keys come from the client's session ids, else the first user text; only a 32-hex hash is kept", () => {
    const messages = [{ role: 'user', content: 'What is in README.md?' }];
    const ids = headerSessionIds({ 'x-claude-code-session-id': 'cc-1', 'x-session-id': 's-2' });
    expect(ids).toEqual(['cc-1', 's-2']);
    const key = sessionKey(ids, messages, 'm', 'main')!;
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(key).not.toContain('cc-1');
    expect(sessionKey([], messages, 'm', 'main')).toBe(sessionKey([], [...messages, { role: 'user', content: 'more' }], 'm', 'main'));
    expect(sessionKey(ids, messages, 'm', 'side')).not.toBe(key);
  });

  test('LRU cap and idle TTL, but a session with a request in flight is never evicted', () => {
    let now = 0;
    const released: string[] = [];
    const registry = new SessionRegistry(
      2,
      1000,
      (s: Session) => released.push(s.key),
      () => now,
    );
    const a = registry.acquire('a'.repeat(32))!; // stays in flight
    const b = registry.acquire('b'.repeat(32))!;
    registry.done(b, 'agent-b');
    registry.acquire('c'.repeat(32));
    expect(released).toEqual(['b'.repeat(32)]); // b, not the older in-flight a
    now = 5000;
    registry.sweep();
    expect(released).toEqual(['b'.repeat(32)]); // a and c are in flight
    registry.done(a, undefined);
    now = 7000;
    registry.sweep();
    expect(released).toEqual(['b'.repeat(32), 'a'.repeat(32)]);
    expect(new SessionRegistry(0, 1000).acquire('d'.repeat(32))).toBeUndefined();
  });
});
