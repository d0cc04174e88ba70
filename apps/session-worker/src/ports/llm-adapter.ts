import { LlmError } from '@skald/agent-loop';
import type {
  ClientSelection,
  LlmClientDescriptor,
  LlmDelta,
  LlmPort,
  LlmResponse,
  WireMessage,
  WireTool,
} from '@skald/agent-loop';
import { isLlmStrength, LlmCallError, LlmManager } from '@skald/llm';

/** The loop's LLM port on the LLM manager: which client next, and one streaming call. */
export class LlmAdapter implements LlmPort {
  constructor(private readonly manager: LlmManager) {}

  async nextClient(s: ClientSelection): Promise<LlmClientDescriptor | null> {
    const selected = await this.manager.select({
      pinned: s.pinned,
      tried: s.tried,
      requiredStrength: s.strength && isLlmStrength(s.strength) ? s.strength : undefined,
    });
    return selected ? { name: selected.name, cacheControl: selected.cacheControl } : null;
  }

  async stream(
    client: LlmClientDescriptor,
    request: { messages: WireMessage[]; tools: WireTool[] },
    signal: AbortSignal,
    onDelta: (delta: LlmDelta) => void,
  ): Promise<LlmResponse> {
    try {
      const r = await this.manager.streamChat(client.name, {
        messages: request.messages,
        tools: request.tools.length > 0 ? request.tools : undefined,
        signal,
        onDelta,
      });
      return {
        content: r.content,
        reasoningContent: r.reasoning.length > 0 ? r.reasoning : null,
        toolCalls: r.toolCalls.map((c) => ({ id: c.id, name: c.name, argumentsText: c.argumentsText })),
        usage: r.usage ? { inputTokens: r.usage.inputTokens, outputTokens: r.usage.outputTokens } : null,
        finishReason: r.finishReason,
      };
    } catch (e) {
      if (e instanceof LlmCallError) throw new LlmError(e.message, e.retriable);
      throw e;
    }
  }
}
