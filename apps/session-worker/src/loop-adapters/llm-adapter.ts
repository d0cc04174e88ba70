import { LlmError } from '@skald/agent-loop';
import type {
  ClientSelection,
  LlmCallContext,
  LlmClientDescriptor,
  LlmDelta,
  LlmPort,
  LlmRefusal,
  LlmResponse,
  WireImageRef,
  WireMessage,
  WireTool,
} from '@skald/agent-loop';
import { isLlmStrength, LlmCallError, LlmManager, type LlmWireMessage } from '@skald/llm';
import type { Logger } from '@skald/service-kit';
import {
  agentRefusal,
  clientRefusal,
  disallowedClients,
  NO_GROUPS,
  noClientRefusal,
  type GroupPolicy,
} from '../groups/group-policy';
import type { OwnerBudget } from '../budgets/budget-rules';
import type { LlmAccounting, LlmFailureKind } from '../llm/llm.service';
import type { TurnMetrics } from '../turns/turn-metrics';

/** How a call that got no answer failed, for the ledger of failures. */
export function failureKind(e: unknown): LlmFailureKind {
  return e instanceof LlmCallError && e.kind !== 'aborted' ? e.kind : 'other';
}

/**
 * A message as the provider takes it. The loop turns every image reference into an image or a
 * marker before it calls the port (`fitImages`); one that is left (a bug) is dropped, never sent.
 */
function sendable(m: WireMessage): LlmWireMessage {
  if (m.role !== 'user') return m;
  const content = m.content;
  if (typeof content === 'string') return { role: 'user', content };
  return { role: 'user', content: content.filter((p): p is Exclude<typeof p, WireImageRef> => p.type !== 'image_ref') };
}

/**
 * The loop's LLM port on the LLM manager: which client next, the budget gate, and one streaming
 * call whose usage (the provider's, or estimated) is written to the ledger before the loop sees
 * the answer, so it is counted before anything about it is announced. One per turn: `log` is the
 * turn's logger, for the ledger's lines; `groups` what the owner's groups allow: an agent or a
 * named client they do not allow is refused with a sentence naming it and the groups (never
 * replaced by another), and AUTO selection and fallback pass over the clients they do not allow.
 * `budget`: the owner's limits, for the budget gate (see `holds`).
 */
export class LlmAdapter implements LlmPort {
  constructor(
    private readonly manager: LlmManager,
    private readonly accounting: LlmAccounting | null = null,
    private readonly metrics: TurnMetrics | null = null,
    private readonly log: Logger | null = null,
    private readonly groups: GroupPolicy = NO_GROUPS,
    /** The owner's limits as the turn's start read them; null: the budget gate reads them. */
    private readonly budget: OwnerBudget | null = null,
  ) {}

  /**
   * The budget hold of each frame's admitted call (a limited user's), until the call is answered
   * (settled with the ledger row), fails for good, or the frame is admitted again. One per frame:
   * a frame's calls are one after another; the frames of a parallel batch each have their own.
   */
  private readonly holds = new Map<string, string>();

  private async dropHold(context: { userId: string; frameId: string }): Promise<void> {
    const hold = this.holds.get(context.frameId);
    if (!hold) return;
    this.holds.delete(context.frameId);
    await this.accounting?.release(context.userId, hold, this.log);
  }

  async nextClient(s: ClientSelection): Promise<LlmClientDescriptor | null> {
    const selected = await this.manager.select({
      pinned: s.pinned,
      tried: [...s.tried, ...disallowedClients(this.groups, this.manager.names())],
      requiredStrength: s.strength && isLlmStrength(s.strength) ? s.strength : undefined,
      scope: s.scope ?? undefined,
    });
    return selected
      ? { name: selected.name, cacheControl: selected.cacheControl, vision: selected.vision ?? null }
      : null;
  }

  async admit(
    context: Omit<LlmCallContext, 'messageId' | 'purpose'> & { pinned?: string | null },
  ): Promise<LlmRefusal | null> {
    const refused =
      agentRefusal(this.groups, context.agentId) ??
      (context.pinned ? clientRefusal(this.groups, context.pinned) : null) ??
      noClientRefusal(this.groups, this.manager.names());
    if (refused) return refused;
    if (!this.accounting) return null;
    // A hold the frame's previous admission left (its call never started, or failed and was not retried).
    await this.dropHold(context);
    const admitted = await this.accounting.admit(context.userId, this.log, this.budget);
    if (admitted.kind === 'refused') return admitted.refusal;
    if (admitted.hold) this.holds.set(context.frameId, admitted.hold);
    return null;
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
        messages: request.messages.map(sendable),
        tools: request.tools.length > 0 ? request.tools : undefined,
        signal,
        onDelta,
      });
      observe('ok');
      if (context?.purpose === 'round') this.metrics?.rounds.inc();
      this.metrics?.llmTokens.inc({ client: r.clientName, kind: 'input' }, r.metered.inputTokens);
      this.metrics?.llmTokens.inc({ client: r.clientName, kind: 'output' }, r.metered.outputTokens);
      if (context && this.accounting) {
        const hold = this.holds.get(context.frameId) ?? null;
        this.holds.delete(context.frameId);
        await this.accounting.record(context, r.clientName, r.model, r.metered, this.log, hold);
      }
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
      const aborted = signal.aborted || (e instanceof LlmCallError && e.aborted);
      if (context && this.accounting && !aborted)
        await this.accounting.recordFailure(context, client.name, failureKind(e), this.log);
      // The loop tries a retriable error again (on this client or the next) under the same admission.
      const final = aborted || !(e instanceof LlmCallError && e.retriable);
      if (context && final) await this.dropHold(context);
      if (e instanceof LlmCallError) throw new LlmError(e.message, e.retriable, e.retryAfterMs);
      throw e;
    }
  }
}
