/**
 * Title and summary requests a client makes beside the real one (OpenCode's title generator, Claude
 * Code's): how the gateway recognises them, and the local side path that answers one without an
 * agent (`side_requests: local`, docs/gateway.md).
 */
import type { ChatMessage } from './request.js';

/** A title generator's own words (OpenCode, Claude Code, Kilo …): such a request is a side request. */
const SIDE_REQUEST =
  /\btitle generator\b|\bgenerate (?:a|an) (?:brief |short |concise )?(?:title|summary)\b|\bwrite a \d+-\d+ word title\b/i;

/** Longest title the local side path answers with (OpenCode asks for ≤ 50). */
const TITLE_CHARS = 50;

/** A title/summary request a client makes on the side of the real one. */
export function isSideRequest(messages: ChatMessage[]): boolean {
  return messages.some((m) => (m.role === 'system' || m.role === 'developer') && SIDE_REQUEST.test(m.content.slice(0, 500)));
}

/** The local side path: the last user text's first line, unquoted, as a title. */
export function localTitle(messages: ChatMessage[]): string {
  const users = messages.filter((m) => m.role === 'user' && m.content.trim() !== '');
  const text = (users.at(-1)?.content ?? 'New conversation').trim();
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? text).trim().replace(/^["'“]+|["'”]+$/g, '');
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1).trimEnd()}…` : line;
}
