/**
 * From a sub-agent's payloads to the answer text: content deltas out of `partial` data, the final
 * text out of the `success` data, and token usage out of whatever the agent reported.
 *
 * What a partial's `data` may carry (anything else — progress, tool steps — is not answer text):
 *   `{delta: "…"}`  text to append;
 *   `{text: "…"}`   the current text segment, either growing (`"Hel"`, `"Hello"`) or a new segment
 *                   (the cursor-cli template sends each assistant message between tool calls this way;
 *                   a new segment is set off by a blank line unless it brings its own white space).
 * The final answer is `data.text` (or `data.content`, or `data` itself when it is a string).
 *
 * A streamed and a non-streamed answer to the same run are the same text: both are what
 * `AnswerStream` emitted, partials first, then `finish()`.
 */
import { reportedUsage } from '../model/usage.js';
import type { Usage } from './openai-shapes.js';

export class AnswerStream {
  private sent = '';
  private segment = '';

  /** Text the client has been sent so far. */
  get text(): string {
    return this.sent;
  }

  /** The new text in a partial's data, or '' when it carries none. */
  push(data: unknown): string {
    if (typeof data !== 'object' || data === null) return '';
    const d = data as { delta?: unknown; text?: unknown };
    if (typeof d.delta === 'string') return this.emit(d.delta);
    if (typeof d.text !== 'string' || d.text === '') return '';
    if (d.text.startsWith(this.segment)) {
      const added = d.text.slice(this.segment.length);
      this.segment = d.text;
      return this.emit(added);
    }
    this.segment = d.text;
    const apart = this.sent !== '' && !/\s$/.test(this.sent) && !/^\s/.test(d.text);
    return this.emit(apart ? `\n\n${d.text}` : d.text);
  }

  /**
   * What is still missing once the final text is known: the rest of it when the partials were its
   * beginning; everything when no text was streamed; nothing when the two disagree (the client
   * already has the streamed version, which is not taken back).
   */
  finish(finalText: string): string {
    if (finalText.startsWith(this.sent)) return this.emit(finalText.slice(this.sent.length));
    return '';
  }

  /**
   * `finish` for a bridged run, whose final text may be its last step's only (what came after the
   * last tool call, from `offset` on: Claude Code's result is its last message): the rest of the
   * whole text, else the rest of the step's, else nothing (they disagree).
   */
  finishStep(finalText: string, offset: number): string {
    if (finalText.startsWith(this.sent)) return this.emit(finalText.slice(this.sent.length));
    const step = this.sent.slice(offset);
    return finalText.startsWith(step) ? this.emit(finalText.slice(step.length)) : '';
  }

  /**
   * Whatever must still be sent for a `success` payload's data: `finish(finalText)`, or, when the
   * run produced no text at all, the data itself as JSON (an agent such as the `basic` template
   * answers with data, never an empty answer). `undefined`: there is nothing to answer with.
   */
  complete(data: unknown): string | undefined {
    const rest = this.finish(finalText(data));
    if (this.sent !== '') return rest;
    if (data === undefined || data === null || data === '' || (typeof data === 'object' && Object.keys(data).length === 0))
      return undefined;
    return this.emit(typeof data === 'string' ? data : JSON.stringify(data, null, 2));
  }

  private emit(text: string): string {
    this.sent += text;
    return text;
  }
}

/** The answer text of a `success` payload's data. */
export function finalText(data: unknown): string {
  if (typeof data === 'string') return data;
  if (typeof data !== 'object' || data === null) return '';
  const d = data as { text?: unknown; content?: unknown; answer?: unknown };
  for (const value of [d.text, d.content, d.answer]) if (typeof value === 'string') return value;
  return '';
}

/**
 * Token usage: the agent's own numbers when it reported them, read the one way every front-end reads
 * them (src/model/usage.ts: `meta.token_usage`, `meta.usage` or `data.usage`, in the protocol's,
 * OpenAI's, Anthropic's or camelCase names), otherwise an estimate of about four characters per token.
 */
export function usageOf(data: unknown, meta: unknown, prompt: string, answer: string): Usage & { estimated?: true } {
  const reported = reportedUsage(meta, data);
  if (reported && reported.input + reported.output > 0) {
    const { input: prompt_tokens, output: completion_tokens } = reported;
    return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
  }
  const prompt_tokens = estimateTokens(prompt);
  const completion_tokens = estimateTokens(answer);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens, estimated: true };
}

/** The usual rule of thumb for English text and code. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
