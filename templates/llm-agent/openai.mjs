/**
 * A minimal OpenAI-compatible Chat Completions client on Node's fetch (OpenAI, Ollama's /v1,
 * vLLM, LM Studio, llama.cpp server, …). JSON mode on, non-streaming, cancellable.
 */

export const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
/** One model call may take a while on a local model; beyond this it is treated as hung. */
const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
/** Transient failures (network, 429, 5xx) are retried this many times, with backoff. */
const TRANSIENT_RETRIES = 2;
const BACKOFF_MS = 500;

export class ChatError extends Error {
  /** @param {string} message @param {{status?: number, retryable?: boolean, cause?: unknown}} [details] */
  constructor(message, details = {}) {
    super(message, details.cause !== undefined ? { cause: details.cause } : undefined);
    this.name = 'ChatError';
    this.status = details.status;
    this.retryable = details.retryable ?? true;
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** AbortSignal.any (Node ≥ 20.3) with a fallback for older 20.x. */
function anySignal(signals) {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) return AbortSignal.abort(signal.reason);
    signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

/** Removes the API key from anything we show. */
function redact(text, apiKey) {
  return apiKey && apiKey.length >= 8 ? text.split(apiKey).join('[redacted]') : text;
}

/**
 * @param {{baseUrl?: string, apiKey?: string, model: string, requestTimeoutMs?: number, temperature?: number}} config
 * @returns {(messages: Array<{role: string, content: string}>, signal?: AbortSignal) =>
 *           Promise<{content: string, finishReason?: string, model: string, usage: {input: number, output: number}}>}
 */
export function createChat(config) {
  const base = (config.baseUrl || DEFAULT_BASE_URL).replace(/\/+$/, '');
  const url = `${base}/chat/completions`;
  const timeoutMs = config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;

  async function once(messages, signal) {
    const body = {
      model: config.model,
      messages,
      // JSON mode. The system prompt also asks for JSON: some models emit endless whitespace otherwise.
      response_format: { type: 'json_object' },
      temperature: config.temperature ?? 0.2,
    };
    const timeout = AbortSignal.timeout(timeoutMs);
    let response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          // Ollama and most local servers ignore the key but some clients insist on one.
          authorization: `Bearer ${config.apiKey || 'none'}`,
        },
        body: JSON.stringify(body),
        signal: signal ? anySignal([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (timeout.aborted) throw new ChatError(`the model did not answer within ${timeoutMs / 1000} s (${url})`);
      throw new ChatError(`cannot reach ${url}: ${error.cause?.code ?? error.message}`, { cause: error });
    }
    const text = await response.text().catch(() => '');
    if (!response.ok) {
      let detail = text.slice(0, 300);
      try {
        detail = JSON.parse(text).error?.message ?? detail;
      } catch {
        /* not JSON */
      }
      const status = response.status;
      const transient = status === 408 || status === 429 || status >= 500;
      const hint =
        status === 401 ? ' (check OPENAI_API_KEY)' : status === 404 ? ` (check OPENAI_BASE_URL and the model name "${config.model}")` : '';
      throw new ChatError(redact(`${url} answered ${status}: ${detail}${hint}`, config.apiKey), { status, retryable: transient });
    }
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ChatError(`${url} answered with something that is not JSON: ${text.slice(0, 120)}`);
    }
    const choice = json.choices?.[0];
    const content = choice?.message?.content;
    return {
      content: typeof content === 'string' ? content : '',
      finishReason: choice?.finish_reason,
      model: typeof json.model === 'string' && json.model ? json.model : config.model,
      usage: { input: Number(json.usage?.prompt_tokens) || 0, output: Number(json.usage?.completion_tokens) || 0 },
    };
  }

  return async function chat(messages, signal) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await once(messages, signal);
      } catch (error) {
        if (signal?.aborted || !(error instanceof ChatError) || !error.retryable || attempt >= TRANSIENT_RETRIES) throw error;
        await sleep(BACKOFF_MS * 2 ** attempt, signal);
      }
    }
  };
}
