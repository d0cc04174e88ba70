import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { LlmCallError } from './llm-call.error';
import type { LlmClientDefinition } from './llm-client-config';
import type { LlmChatResult } from './llm-wire.types';

/** Asked for at each call: a tracer taken at load would be the no-op one of a process that registers later. */
const tracer = () => trace.getTracer('@skald/llm');

/** Where the client's server is (host and port only: a base URL may carry credentials). */
function serverOf(baseUrl: string): Record<string, string | number> {
  try {
    const url = new URL(baseUrl);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return { 'server.address': url.hostname, 'server.port': port };
  } catch {
    return {};
  }
}

/**
 * One chat call in a client span after the OpenTelemetry GenAI semantic conventions
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): `chat <model>` with
 * `gen_ai.operation.name`, `gen_ai.provider.name` (`openai`: the wire protocol every client
 * speaks), `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.usage.input_tokens` /
 * `output_tokens` (as metered: estimated when the provider sent no usage) and
 * `gen_ai.response.finish_reasons`; a failure sets `error.type` (the {@link LlmCallError} kind).
 * Never the messages, the tools or the answer. With tracing off the span is the API's no-op one.
 */
export async function inChatSpan(
  client: LlmClientDefinition,
  call: () => Promise<LlmChatResult>,
): Promise<LlmChatResult> {
  const span = tracer().startSpan(`chat ${client.model}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': client.model,
      'skald.llm.client': client.name,
      ...serverOf(client.baseUrl),
    },
  });
  try {
    const result = await call();
    if (span.isRecording()) {
      span.setAttributes({
        'gen_ai.response.model': result.model,
        'gen_ai.usage.input_tokens': result.metered.inputTokens,
        'gen_ai.usage.output_tokens': result.metered.outputTokens,
        'gen_ai.response.finish_reasons': [result.finishReason],
        ...(result.metered.estimated ? { 'skald.llm.usage_estimated': true } : {}),
      });
    }
    return result;
  } catch (err) {
    // The kind only: a provider's error text may quote what was sent.
    const kind = err instanceof LlmCallError ? err.kind : 'other';
    span.setAttribute('error.type', kind);
    span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
    throw err;
  } finally {
    span.end();
  }
}
