import { LlmError } from '@skald/agent-loop';
import type {
  ClientSelection,
  LlmCallContext,
  LlmClientDescriptor,
  LlmDelta,
  LlmPort,
  LlmRefusal,
  LlmResponse,
  WireMessage,
  WireTool,
} from '@skald/agent-loop';
import { isLlmStrength, LlmCallError, LlmManager } from '@skald/llm';
import type { Logger } from '@skald/service-kit';
import type { LlmAccounting } from '../llm/llm.service';
import type { TurnMetrics } from '../turns/turn-metrics';

/**
 * The loop's LLM port on the LLM manager: which client next, the budget gate, and one streaming
 * call whose usage (the provider's, or estimated) is written to the ledger before the loop sees
 * the answer, so it is counted before anything about it is announced. One per turn: `log` is the
 * turn's logger, for the ledger's lines.
 */
export class LlmAdapter implements LlmPort {
  constructor(
    private readonly manager: LlmManager,
    private readonly accounting: LlmAccounting | null = null,
    private readonly metrics: TurnMetrics | null = null,
    private readonly log: Logger | null = null,
  ) {}

  async nextClient(s: ClientSelection): Promise<LlmClientDescriptor | null> {
    const selected = await this.manager.select({
      pinned: s.pinned,
      tried: s.tried,
      requiredStrength: s.strength && isLlmStrength(s.strength) ? s.strength : undefined,
      scope: s.scope ?? undefined,
    });
    return selected ? { name: selected.name, cacheControl: selected.cacheControl } : null;
  }

  admit(context: Omit<LlmCallContext, 'messageId' | 'purpose'>): Promise<LlmRefusal | null> {
    return this.accounting ? this.accounting.admit(context.userId, this.log) : Promise.resolve(null);
  }

  async stream(
    client: LlmClientDescriptor,
    request: { messages: WireMessage[]; tools: WireTool[] },
    signal: AbortSignal,
    onDelta: (delta: LlmDelta) => void,
    context?: LlmCallContext,
  ): Promise<LlmResponse> {
    const started = performance.now();
    const observe = (outcome: string) =>
      this.metrics?.llmSeconds.observe({ client: client.name, outcome }, (performance.now() - started) / 1000);
    try {
      const r = await this.manager.streamChat(client.name, {
        messages: request.messages,
        tools: request.tools.length > 0 ? request.tools : undefined,
        signal,
        onDelta,
      });
      observe('ok');
      if (context?.purpose === 'round') this.metrics?.rounds.inc();
      this.metrics?.llmTokens.inc({ client: r.clientName, kind: 'input' }, r.metered.inputTokens);
      this.metrics?.llmTokens.inc({ client: r.clientName, kind: 'output' }, r.metered.outputTokens);
      if (context && this.accounting) await this.accounting.record(context, r.clientName, r.model, r.metered, this.log);
      return {
        content: r.content,
        reasoningContent: r.reasoning.length > 0 ? r.reasoning : null,
        toolCalls: r.toolCalls.map((c) => ({ id: c.id, name: c.name, argumentsText: c.argumentsText })),
        usage: {
          inputTokens: r.metered.inputTokens,
          outputTokens: r.metered.outputTokens,
          estimated: r.metered.estimated,
          costUsd: r.metered.costUsd,
        },
        model: r.model,
        finishReason: r.finishReason,
      };
    } catch (e) {
      observe(signal.aborted ? 'cancelled' : 'error');
      if (e instanceof LlmCallError) throw new LlmError(e.message, e.retriable, e.retryAfterMs);
      throw e;
    }
  }
}
