import { OPENAI_CONVERSATION_HEADER, type ChatCompletionRequest } from '@skald/contracts';
import type { RunningAnswer } from './chat-completions.service';
import { toOpenAiError } from './openai-error';
import type { AnswerStep } from './turn-answer';

export interface AnswerResponse {
  on(event: 'close', listener: () => void): unknown;
  status(code: number): AnswerResponse;
  setHeader(name: string, value: string): unknown;
  flushHeaders(): void;
  write(chunk: string): boolean;
  end(chunk?: string): unknown;
  json(body: unknown): unknown;
  readonly headersSent: boolean;
}

/** An SSE comment every this often keeps proxies from closing a stream whose turn is long. */
const KEEPALIVE_MS = 15_000;

/**
 * Cuts an answer where the first of the request's stop sequences ends, however the rounds split it:
 * `take(text)` is what may be sent now (a tail that could begin a stop sequence is held back until
 * the next text or `flush`), `hit` says a stop sequence was reached (the turn is then stopped).
 */
export class StopSequences {
  /** Everything taken so far, sent or held. */
  private all = '';
  private sentLength = 0;
  hit = false;
  private readonly stops: string[];

  constructor(stop: string | string[] | null | undefined) {
    this.stops = stop === null || stop === undefined ? [] : typeof stop === 'string' ? [stop] : stop;
  }

  take(text: string): string {
    if (this.hit) return '';
    const from = this.all.length;
    this.all += text;
    // As a model streaming token by token would stop: at the first place a stop sequence ends (the
    // longest of those ending there), the text cut where that one begins.
    for (let end = from + 1; end <= this.all.length; end++) {
      let longest = 0;
      for (const s of this.stops)
        if (s.length > longest && s.length <= end && this.all.startsWith(s, end - s.length)) longest = s.length;
      if (longest > 0) {
        this.hit = true;
        this.all = this.all.slice(0, end - longest);
        return this.release(this.all.length);
      }
    }
    return this.release(this.all.length - this.heldTail());
  }

  /** The held-back tail, once no more text comes. */
  flush(): string {
    return this.release(this.all.length);
  }

  /** What the client has: the answer up to the stop, once flushed. */
  get text(): string {
    return this.all.slice(0, this.sentLength);
  }

  /** The longest tail of the text that is a proper beginning of a stop sequence. */
  private heldTail(): number {
    let held = 0;
    for (const s of this.stops)
      for (let n = Math.min(s.length - 1, this.all.length); n > held; n--)
        if (this.all.endsWith(s.slice(0, n))) {
          held = n;
          break;
        }
    return held;
  }

  private release(upTo: number): string {
    const out = this.all.slice(this.sentLength, Math.max(upTo, this.sentLength));
    this.sentLength = Math.max(upTo, this.sentLength);
    return out;
  }
}

/**
 * Writes a running answer as OpenAI's Chat Completions do: one `chat.completion` object, or (with
 * `stream`) `chat.completion.chunk` server-sent events ending in `[DONE]`, reasoning in the
 * `reasoning_content` field of the deltas (DeepSeek's, vLLM's and OpenRouter's name for it). A
 * client that goes away (`gone`) or a stop sequence stops the turn; a whole answer is recorded as
 * the list the client now holds.
 */
export async function writeAnswer(
  request: ChatCompletionRequest,
  running: RunningAnswer,
  res: AnswerResponse,
  gone: AbortSignal,
): Promise<void> {
  const id = `chatcmpl-${running.messageId}`;
  const created = Math.floor(Date.now() / 1000);
  const stops = new StopSequences(request.stop);
  res.setHeader(OPENAI_CONVERSATION_HEADER, running.sessionId);
  res.setHeader('cache-control', 'no-store');
  res.setHeader('x-content-type-options', 'nosniff');
  const usage = (): { prompt_tokens: number; completion_tokens: number; total_tokens: number } => ({
    ...running.usage,
    total_tokens: running.usage.prompt_tokens + running.usage.completion_tokens,
  });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model: request.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })}\n\n`;

  const stream = request.stream === true;
  let keepalive: NodeJS.Timeout | null = null;
  if (stream) {
    res.status(200);
    res.setHeader('content-type', 'text/event-stream; charset=utf-8');
    res.setHeader('x-accel-buffering', 'no');
    res.flushHeaders();
    res.write(chunk({ role: 'assistant', content: '' }));
    keepalive = setInterval(() => res.write(': keep-alive\n\n'), KEEPALIVE_MS);
  }
  let reasoning = '';
  let finish: 'stop' | 'length' | null = null;
  let failed: Extract<AnswerStep, { kind: 'failed' }> | null = null;
  try {
    for await (const step of running.steps) {
      if (step.kind === 'content') {
        const text = stops.take(step.text);
        if (stream && text !== '') res.write(chunk({ content: text }));
        if (stops.hit) {
          finish = 'stop';
          break;
        }
      } else if (step.kind === 'reasoning') {
        reasoning += step.text;
        if (stream) res.write(chunk({ reasoning_content: step.text }));
      } else if (step.kind === 'end') finish = step.finish;
      else failed = step;
    }
  } catch (e) {
    if (!stream) throw e;
    failed = { kind: 'failed', status: 503, code: 'unavailable', message: 'the session service stopped answering' };
  } finally {
    if (keepalive) clearInterval(keepalive);
  }
  if (gone.aborted || stops.hit) await running.stop().catch(() => undefined);
  if (gone.aborted) return;
  if (failed) {
    const body = toOpenAiError(failed.status, { code: failed.code, message: failed.message });
    if (stream) res.end(`data: ${JSON.stringify(body)}\n\n`);
    else res.status(failed.status).json(body);
    return;
  }
  if (finish === null) return void res.end();
  const tail = stops.flush();
  await running.complete(stops.text);
  if (stream) {
    if (tail !== '') res.write(chunk({ content: tail }));
    res.write(chunk({}, finish));
    if (request.stream_options?.include_usage)
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: request.model, choices: [], usage: usage() })}\n\n`,
      );
    res.end('data: [DONE]\n\n');
    return;
  }
  res.status(200).json({
    id,
    object: 'chat.completion',
    created,
    model: request.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: stops.text, ...(reasoning ? { reasoning_content: reasoning } : {}) },
        logprobs: null,
        finish_reason: finish,
      },
    ],
    usage: usage(),
  });
}
