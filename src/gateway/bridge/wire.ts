/**
 * The tool side of the three model APIs (bridge mode, docs/gateway.md), as each API's reader (beside
 * its adapter: request.ts for Chat, responses.ts, anthropic-messages.ts) gives it: which tools the
 * client offers (as the protocol's `ToolDefinition`s), which tool calls its history shows, which
 * tool results it sends back; and which text of a results turn is the client's own reminders.
 *
 * What the readers guarantee:
 * - only function tools are offered (Chat `function`, Responses `function`, Messages custom tools);
 *   a provider's own server tools (web search, code interpreter …) are not the client's to run;
 * - a result's content goes through whole (no truncation), as a string when it is text and as the
 *   client's JSON otherwise; an error result (`is_error`) is an error answer;
 * - a tool-results turn that also carries text of the user's own (anything but Claude Code's
 *   `<system-reminder>` blocks) is marked `steering`: it is not a plain continuation.
 */

/** A tool the client offers, in the protocol's shape (docs/protocol.md, "Tool calls"). */
export interface ToolDefinition {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** A tool call the client's history shows the assistant making. */
export interface ToolCallIn {
  id: string;
  name: string;
}

/** A tool result the client sends back for call `id`. */
export interface ToolResultIn {
  id: string;
  answer: { content: unknown } | { error: string };
}

/** What a message of the transcript is to bridge mode. */
export interface MessageTools {
  calls?: ToolCallIn[];
  results?: ToolResultIn[];
  /** A results turn with text of its own (not a plain continuation). */
  steering?: boolean;
}

/** Claude Code's reminders, which it adds to tool-result turns by itself. */
const SYSTEM_REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;

/** `text` without Claude Code's own reminders. */
export function withoutReminders(text: string): string {
  return text.replace(SYSTEM_REMINDER, '');
}

/** Whether `text` says anything beyond Claude Code's own reminders. */
export function isSteering(text: string): boolean {
  return withoutReminders(text).trim() !== '';
}
