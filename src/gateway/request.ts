/**
 * A `POST /v1/chat/completions` body checked and reduced to what the gateway uses, and the prompt a
 * sub-agent gets from its `messages`.
 *
 * Prompt format: a single user message is passed as its plain text (what a CLI agent expects).
 * Anything else becomes a transcript in which every message keeps its role:
 *
 *   <system>
 *   You are terse.
 *   </system>
 *
 *   <user>
 *   Hi
 *   </user>
 *
 * Non-text parts (images, audio, files) are replaced by a short placeholder: CLI agents take text.
 */

export interface ChatMessage {
  role: string;
  content: string;
  name?: string;
}

export interface ChatRequest {
  /** As sent; `undefined` when the body had none (the configured default model is used). */
  model: string | undefined;
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
}

/** A 400 with OpenAI's `param` field. */
export class InvalidRequest extends Error {
  override readonly name = 'InvalidRequest';
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

/** Checks a parsed JSON body. Throws `InvalidRequest` with a message that says what to send. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  if (b.model !== undefined && b.model !== null && (typeof b.model !== 'string' || b.model.trim() === '')) {
    throw new InvalidRequest('`model` must be a non-empty string.', 'model');
  }
  if (!Array.isArray(b.messages)) throw new InvalidRequest('`messages` is required: a list of {role, content} objects.', 'messages');
  if (b.messages.length === 0) throw new InvalidRequest('`messages` must contain at least one message.', 'messages');
  const messages = b.messages.map((m, i) => parseMessage(m, i));
  if (messages.every((m) => m.content.trim() === ''))
    throw new InvalidRequest('Every message in `messages` is empty: there is nothing to ask.', 'messages');
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean')
    throw new InvalidRequest('`stream` must be true or false.', 'stream');
  const options = b.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw new InvalidRequest('`stream_options` must be an object.', 'stream_options');
  }
  const n = b.n;
  if (n !== undefined && n !== null && n !== 1)
    throw new InvalidRequest('Only `n: 1` is supported: one sub-agent run answers one request.', 'n');
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    messages,
    stream: b.stream === true,
    includeUsage: b.stream === true && (options as { include_usage?: unknown } | undefined)?.include_usage === true,
  };
}

function parseMessage(value: unknown, index: number): ChatMessage {
  const param = `messages[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidRequest(`\`${param}\` must be an object with \`role\` and \`content\`.`, param);
  const m = value as Record<string, unknown>;
  if (typeof m.role !== 'string' || !ROLES.includes(m.role)) {
    throw new InvalidRequest(`\`${param}.role\` must be one of ${ROLES.join(', ')}.`, `${param}.role`);
  }
  let content = contentText(m.content, `${param}.content`);
  // An assistant turn that only called tools still belongs in the transcript.
  if (Array.isArray(m.tool_calls)) {
    const calls = m.tool_calls
      .map((call) => {
        const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
        return fn && typeof fn.name === 'string'
          ? `[called ${fn.name}(${typeof fn.arguments === 'string' ? fn.arguments : ''})]`
          : undefined;
      })
      .filter((text): text is string => text !== undefined);
    content = [content, ...calls].filter((text) => text !== '').join('\n');
  }
  const message: ChatMessage = { role: m.role, content };
  if (typeof m.name === 'string' && m.name !== '') message.name = m.name;
  else if (typeof m.tool_call_id === 'string' && m.tool_call_id !== '') message.name = m.tool_call_id;
  return message;
}

/** `content` as a string, or an array of parts (`{type:'text', text}` and others). */
function contentText(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new InvalidRequest(`\`${param}\` must be a string or a list of content parts.`, param);
  return content
    .map((part, i) => {
      if (typeof part === 'string') return part;
      if (typeof part !== 'object' || part === null)
        throw new InvalidRequest(`\`${param}[${i}]\` must be a content part object.`, `${param}[${i}]`);
      const p = part as { type?: unknown; text?: unknown; refusal?: unknown };
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (p.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      return `[${typeof p.type === 'string' ? p.type : 'content'} omitted: the sub-agent takes text only]`;
    })
    .join('');
}

/** The prompt for the sub-agent (see the format at the top of this file). */
export function buildPrompt(messages: ChatMessage[]): string {
  const only = messages[0];
  if (messages.length === 1 && only && only.role === 'user') return only.content;
  return messages
    .filter((m) => m.content !== '')
    .map((m) => {
      const name = m.name ? ` name="${m.name.replace(/["<>]/g, '')}"` : '';
      return `<${m.role}${name}>\n${m.content}\n</${m.role}>`;
    })
    .join('\n\n');
}
