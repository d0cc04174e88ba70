/**
 * One model call for a round, with the loop-owned resilience: a retriable error is tried again
 * on the same client after a backoff that honours `Retry-After` (`llmRetry`: tries and total
 * wait bounded; each retry announced as a `model_fallback` to the same client); then the port
 * names the next client (`model_fallback`), the messages are rebuilt when the caching mode
 * changes; when no client is left, the round's clients (`maxLlmAttempts`) are spent, or the
 * error is not retriable, `llm_failed`. A stop aborts a call and a wait alike. A refusal of the
 * port (`admit`, e.g. a used-up budget) fails the round before any client is tried.
 */
import { retryDelayMs, sleep } from './llm-retry';
import { LlmError, type LlmCallContext, type LlmClientDescriptor, type LlmResponse } from './ports';
import { ABORTED, raceAbort } from './signals';
import { commit, type FrameContext } from './turn-context';
import type { WireMessage, WireTool } from './types';

export type ModelCall =
  | { kind: 'response'; response: LlmResponse; client: LlmClientDescriptor }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: string; code?: string };

export function clientPin(fctx: FrameContext): string | null {
  if (fctx.frame.parentToolCallId === null) return fctx.turn.session.pinnedClient ?? fctx.agent.client;
  return fctx.frame.clientPin ?? fctx.agent.client;
}

export async function callModel(
  fctx: FrameContext,
  build: (cacheControl: boolean) => Promise<WireMessage[]>,
  tools: WireTool[],
  messageId: string,
): Promise<ModelCall> {
  const { deps, session } = fctx.turn;
  const who = { sessionId: session.id, userId: session.userId, agentId: fctx.agent.id, frameId: fctx.frame.id };
  const refusal = deps.llm.admit ? await deps.llm.admit(who) : null;
  if (refusal) return { kind: 'failed', error: refusal.message, code: refusal.code };
  const context: LlmCallContext = { ...who, messageId, purpose: 'round' };
  const maxAttempts = Math.max(1, deps.config.maxLlmAttempts);
  const tried: string[] = [];
  const select = async (): Promise<LlmClientDescriptor | null> =>
    deps.llm.nextClient({
      agentId: fctx.agent.id,
      scope: fctx.agent.scope ?? null,
      pinned: clientPin(fctx),
      strength: fctx.agent.strength,
      tried: [...tried],
    });
  let client = await select();
  if (!client) {
    const error = 'no LLM client is available';
    await commit(fctx.turn, [], [{ type: 'llm_failed', tried: [], last_error: error }]);
    return { kind: 'failed', error };
  }
  let messages = await build(client.cacheControl);
  const wait = deps.clock.sleep ? deps.clock.sleep.bind(deps.clock) : sleep;
  let triesOnClient = 1;
  let waitedMs = 0;
  for (;;) {
    if (fctx.signal.aborted) return { kind: 'cancelled' };
    try {
      const response = await raceAbort(
        deps.llm.stream(
          client,
          { messages, tools },
          fctx.signal,
          (d) =>
            deps.events.ephemeral({
              type: 'token_delta',
              session_id: session.id,
              message_id: messageId,
              kind: d.kind,
              delta: d.delta,
            }),
          context,
        ),
        fctx.signal,
      );
      if (response === ABORTED) return { kind: 'cancelled' };
      return { kind: 'response', response, client };
    } catch (error) {
      if (fctx.signal.aborted) return { kind: 'cancelled' };
      const message = error instanceof Error ? error.message : String(error);
      const retriable = error instanceof LlmError && error.retriable;
      const delay = retriable ? retryDelayMs(deps.config.llmRetry, triesOnClient, waitedMs, error.retryAfterMs) : null;
      if (delay !== null) {
        triesOnClient += 1;
        const reason = `${message}; try ${triesOnClient} of ${deps.config.llmRetry.triesPerClient} in ${formatSeconds(delay)}`;
        await commit(fctx.turn, [], [{ type: 'model_fallback', from: client.name, to: client.name, reason }]);
        await wait(delay, fctx.signal);
        if (fctx.signal.aborted) return { kind: 'cancelled' };
        waitedMs += delay;
        continue;
      }
      tried.push(client.name);
      const next = retriable && tried.length < maxAttempts ? await select() : null;
      if (!next) {
        await commit(fctx.turn, [], [{ type: 'llm_failed', tried: [...tried], last_error: message }]);
        return { kind: 'failed', error: message };
      }
      await commit(fctx.turn, [], [{ type: 'model_fallback', from: client.name, to: next.name, reason: message }]);
      if (next.cacheControl !== client.cacheControl) messages = await build(next.cacheControl);
      client = next;
      triesOnClient = 1;
      waitedMs = 0;
    }
  }
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
