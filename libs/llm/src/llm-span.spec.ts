import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { LlmCallError } from './llm-call.error';
import type { LlmClientDefinition } from './llm-client-config';
import { inChatSpan } from './llm-span';
import type { LlmChatResult } from './llm-wire.types';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => trace.setGlobalTracerProvider(provider));
afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});
afterEach(() => exporter.reset());

const client = {
  name: 'main',
  model: 'gpt-test',
  baseUrl: 'https://user:pw@llm.example:8443/v1',
} as LlmClientDefinition;

const result: LlmChatResult = {
  clientName: 'main',
  model: 'gpt-test-2026',
  content: 'the secret answer',
  reasoning: '',
  toolCalls: [],
  usage: { inputTokens: 120, outputTokens: 7 },
  metered: { inputTokens: 120, outputTokens: 7, cachedInputTokens: 0, estimated: false, costUsd: null },
  finishReason: 'stop',
};

describe('inChatSpan (GenAI semantic conventions)', () => {
  it('records one client span per call: model, tokens and finish reason, never the answer or the credentials', async () => {
    await expect(inChatSpan(client, async () => result)).resolves.toBe(result);
    const [span] = exporter.getFinishedSpans();
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    expect(span.name).toBe('chat gpt-test');
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.response.model': 'gpt-test-2026',
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.finish_reasons': ['stop'],
      'skald.llm.client': 'main',
      'server.address': 'llm.example',
      'server.port': 8443,
    });
    expect(JSON.stringify(span.attributes)).not.toMatch(/secret|pw/);
  });

  it('marks a failed call with its error kind only', async () => {
    const failure = new LlmCallError(
      'rate_limited',
      'main',
      'provider said: your prompt "private text" was too long',
      429,
    );
    await expect(inChatSpan(client, () => Promise.reject(failure))).rejects.toBe(failure);
    const [span] = exporter.getFinishedSpans();
    expect(span.attributes['error.type']).toBe('rate_limited');
    expect(span.status).toEqual({ code: 2, message: 'rate_limited' });
    expect(JSON.stringify({ a: span.attributes, s: span.status, e: span.events })).not.toContain('private text');
  });
});
