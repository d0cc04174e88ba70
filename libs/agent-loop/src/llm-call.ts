/**
 * One model call for a round, with the loop-owned resilience: a retriable error is tried again
 * on the same client after a backoff that honours `Retry-After` (`llmRetry`: tries and total
 * wait bounded; each retry announced as a `model_fallback` to the same client); then the port
 * names the next client (`model_fallback`), the messages are rebuilt when the caching mode
 * changes; when no client is left, the round's clients (`maxLlmAttempts`) are spent, or the
 * error is not retriable, `llm_failed`. A stop aborts a call and a wait alike. A refusal of the
 * port (`admit`, e.g. a used-up budget) fails the round before any client is tried.
 */
import { fitImages } from './images';
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
  const refusal = deps.llm.admit ? await deps.llm.admit({ ...who, pinned: clientPin(fctx) }) : null;
  if (refusal) return { kind: 'failed', error: refusal.message, code: refusal.code };
  const context: LlmCallContext = { ...who, messageId, purpose: 'round' };
  const select = async (tried: string[]): Promise<LlmClientDescriptor | null> =>
    deps.llm.nextClient({
      agentId: fctx.agent.id,
      scope: fctx.agent.scope ?? null,
      pinned: clientPin(fctx),
      strength: fctx.agent.strength,
      tried,
    });
  const client = await select([]);
  if (!client) {
    const error = 'no LLM client is available';
    await commit(fctx.turn, [], [{ type: 'llm_failed', tried: [], last_error: error }]);
    return { kind: 'failed', error };
  }
  let messages = await build(client.cacheControl);
  const result = await withLlmResilience(fctx, client, select, {
    attempt: async (c) => {
      // Where each delta starts in its kind's text of this call (a call tried again starts at 0).
      const at = { content: 0, reasoning: 0 };
      // Images as this client takes them (each client of a fallback has its own vision and limits).
      const sent = await fitImages(messages, c, deps.images, session.userId, fctx.signal);
      return deps.llm.stream(
        c,
        { messages: sent, tools },
        fctx.signal,
        (d) => {
          const offset = at[d.kind];
          at[d.kind] += d.delta.length;
          deps.events.ephemeral({
            type: 'token_delta',
            session_id: session.id,
            message_id: messageId,
            depth: fctx.frame.depth,
            kind: d.kind,
            offset,
            delta: d.delta,
          });
        },
        context,
      );
    },
    retrying: (c, reason) => commit(fctx.turn, [], [{ type: 'model_fallback', from: c.name, to: c.name, reason }]),
    fallingBack: async (from, to, reason) => {
      await commit(fctx.turn, [], [{ type: 'model_fallback', from: from.name, to: to.name, reason }]);
      if (to.cacheControl !== from.cacheControl) messages = await build(to.cacheControl);
    },
  });
  if (result.kind === 'failed')
    await commit(fctx.turn, [], [{ type: 'llm_failed', tried: result.tried, last_error: result.error }]);
  if (result.kind === 'ok') return { kind: 'response', response: result.value, client: result.client };
  return result.kind === 'failed' ? { kind: 'failed', error: result.error } : result;
}

export type Resilient<T> =
  | { kind: 'ok'; value: T; client: LlmClientDescriptor }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: string; tried: string[] };

/**
 * `attempt` on `first`, under the loop's resilience rules: a retriable error is tried again on the
 * same client after the backoff of `llmRetry` (`retrying` is told the reason first), then on the next
 * client `select` names (`fallingBack`), at most `maxLlmAttempts` clients; a non-retriable error, or
 * no client left, fails. A stop (`fctx.signal`) ends a call and a wait alike. Every loop here is
 * bounded: tries per client and their total wait by the policy, clients by `maxLlmAttempts`.
 */
export async function withLlmResilience<T>(
  fctx: FrameContext,
  first: LlmClientDescriptor,
  select: (tried: string[]) => Promise<LlmClientDescriptor | null>,
  hooks: {
    attempt: (client: LlmClientDescriptor) => Promise<T>;
    retrying?: (client: LlmClientDescriptor, reason: string) => Promise<void>;
    fallingBack?: (from: LlmClientDescriptor, to: LlmClientDescriptor, reason: string) => Promise<void>;
  },
): Promise<Resilient<T>> {
  const { deps } = fctx.turn;
  const maxAttempts = Math.max(1, deps.config.maxLlmAttempts);
  const wait = deps.clock.sleep ? deps.clock.sleep.bind(deps.clock) : sleep;
  const tried: string[] = [];
  let client = first;
  let triesOnClient = 1;
  let waitedMs = 0;
  for (;;) {
    if (fctx.signal.aborted) return { kind: 'cancelled' };
    try {
      const value = await raceAbort(hooks.attempt(client), fctx.signal);
      if (value === ABORTED) return { kind: 'cancelled' };
      return { kind: 'ok', value, client };
    } catch (error) {
      if (fctx.signal.aborted) return { kind: 'cancelled' };
      const message = error instanceof Error ? error.message : String(error);
      const retriable = error instanceof LlmError && error.retriable;
      const delay = retriable ? retryDelayMs(deps.config.llmRetry, triesOnClient, waitedMs, error.retryAfterMs) : null;
      if (delay !== null) {
        triesOnClient += 1;
        await hooks.retrying?.(
          client,
          `${message}; try ${triesOnClient} of ${deps.config.llmRetry.triesPerClient} in ${formatSeconds(delay)}`,
        );
        await wait(delay, fctx.signal);
        if (fctx.signal.aborted) return { kind: 'cancelled' };
        waitedMs += delay;
        continue;
      }
      tried.push(client.name);
      const next = retriable && tried.length < maxAttempts ? await select([...tried]) : null;
      if (!next) return { kind: 'failed', error: message, tried: [...tried] };
      await hooks.fallingBack?.(client, next, message);
      client = next;
      triesOnClient = 1;
      waitedMs = 0;
    }
  }
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
