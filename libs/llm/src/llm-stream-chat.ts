import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { LlmCallError, toLlmCallError } from './llm-call.error';
import type { LlmClientDefinition } from './llm-client-config';
import { meterCall } from './llm-metering';
import type { LlmChatRequest, LlmChatResult, LlmFinishReason, LlmToolCall, LlmUsage } from './llm-wire.types';

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;

/** Raised by the caller's `onDelta`: passed through untouched (it is not an LLM failure). */
class DeltaHandlerError extends Error {
  constructor(readonly original: unknown) {
    super('onDelta threw');
  }
}

/**
 * One streaming chat completion against one client: `stream: true` with usage, the caller's
 * signal wired to the HTTP request, a whole-call deadline and an idle deadline of our own (so a
 * stalled stream ends too), deltas reassembled into content, reasoning and tool calls.
 */
export async function streamChat(
  openai: OpenAI,
  client: LlmClientDefinition,
  request: LlmChatRequest,
): Promise<LlmChatResult> {
  const controller = new AbortController();
  const deadline = new Deadlines(controller, client);
  const onCallerAbort = (): void => controller.abort();
  if (request.signal?.aborted) throw new LlmCallError('aborted', client.name, 'the caller cancelled the request');
  request.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const acc = new Accumulator();
  try {
    const body = {
      ...client.extraParams,
      ...request.params,
      model: client.model,
      messages: request.messages,
      ...(request.tools && request.tools.length > 0 ? { tools: request.tools } : {}),
      stream: true,
      stream_options: { include_usage: true },
    } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming;
    deadline.start();
    const stream = await openai.chat.completions.create(body, { signal: controller.signal });
    for await (const chunk of stream) {
      deadline.touch();
      acc.add(chunk, (delta) => {
        try {
          request.onDelta?.(delta);
        } catch (err) {
          throw new DeltaHandlerError(err);
        }
      });
    }
    // The SDK ends the iteration quietly when the request is aborted.
    if (controller.signal.aborted) throw new Error('stream ended by abort');
    return acc.result(client, request);
  } catch (err) {
    if (err instanceof DeltaHandlerError) {
      controller.abort();
      throw err.original;
    }
    throw toLlmCallError(err, {
      clientName: client.name,
      apiKey: client.apiKey,
      aborted: request.signal?.aborted ?? false,
      timedOut: deadline.fired,
    });
  } finally {
    deadline.clear();
    request.signal?.removeEventListener('abort', onCallerAbort);
  }
}

class Deadlines {
  fired: string | null = null;
  private total: NodeJS.Timeout | undefined;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly controller: AbortController,
    private readonly client: LlmClientDefinition,
  ) {}

  start(): void {
    this.total = setTimeout(
      () => this.fire(`no complete answer within ${this.client.timeoutMs} ms`),
      this.client.timeoutMs,
    );
    this.touch();
  }

  touch(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.fire(`no data for ${this.client.idleTimeoutMs} ms`), this.client.idleTimeoutMs);
  }

  clear(): void {
    clearTimeout(this.total);
    clearTimeout(this.idle);
  }

  private fire(reason: string): void {
    this.fired ??= reason;
    this.controller.abort();
  }
}

class Accumulator {
  private content = '';
  private reasoning = '';
  private readonly calls = new Map<number, { id: string; name: string; argumentsText: string }>();
  private finishReason: string | null = null;
  private usage: LlmUsage | null = null;

  add(chunk: Chunk, emit: (delta: { kind: 'content' | 'reasoning'; delta: string }) => void): void {
    if (chunk.usage) this.usage = toUsage(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta as Chunk['choices'][number]['delta'] & {
      reasoning_content?: unknown;
      reasoning?: unknown;
    };
    // DeepSeek / vLLM / llm-sim send `reasoning_content`; OpenRouter and Ollama send `reasoning`.
    const reasoning =
      typeof delta?.reasoning_content === 'string'
        ? delta.reasoning_content
        : typeof delta?.reasoning === 'string'
          ? delta.reasoning
          : '';
    if (reasoning) {
      this.reasoning += reasoning;
      emit({ kind: 'reasoning', delta: reasoning });
    }
    if (typeof delta?.content === 'string' && delta.content !== '') {
      this.content += delta.content;
      emit({ kind: 'content', delta: delta.content });
    }
    for (const call of delta?.tool_calls ?? []) {
      const current = this.calls.get(call.index) ?? { id: '', name: '', argumentsText: '' };
      if (call.id) current.id = call.id;
      // OpenAI sends the name once; some servers repeat it in every delta: keep the first.
      if (call.function?.name && current.name === '') current.name = call.function.name;
      if (call.function?.arguments) current.argumentsText += call.function.arguments;
      this.calls.set(call.index, current);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  result(client: LlmClientDefinition, request: LlmChatRequest): LlmChatResult {
    if (this.finishReason === null) {
      throw new LlmCallError('invalid_response', client.name, 'the stream ended without a finish_reason');
    }
    const toolCalls: LlmToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => {
        if (call.name === '')
          throw new LlmCallError('invalid_response', client.name, `tool call #${index} has no function name`);
        return {
          id: call.id || `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
          name: call.name,
          argumentsText: call.argumentsText,
        };
      });
    const answer = { content: this.content, reasoning: this.reasoning, toolCalls, usage: this.usage };
    return {
      clientName: client.name,
      model: client.model,
      ...answer,
      metered: meterCall(client, request, answer),
      finishReason: normaliseFinishReason(this.finishReason),
    };
  }
}

function toUsage(usage: NonNullable<Chunk['usage']>): LlmUsage {
  const result: LlmUsage = { inputTokens: usage.prompt_tokens ?? 0, outputTokens: usage.completion_tokens ?? 0 };
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (typeof cached === 'number') result.cachedInputTokens = cached;
  if (typeof reasoning === 'number') result.reasoningTokens = reasoning;
  return result;
}

function normaliseFinishReason(reason: string): LlmFinishReason {
  switch (reason) {
    case 'stop':
    case 'tool_calls':
    case 'length':
    case 'content_filter':
      return reason;
    case 'function_call':
      return 'tool_calls';
    default:
      return 'other';
  }
}
