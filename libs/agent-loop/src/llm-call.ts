/**
 * One model call for a round, with the loop-owned fallback: on a retriable error ask the port
 * for the next client (`model_fallback`), rebuild the messages when the caching mode changes;
 * when nothing is left or the error is not retriable, `llm_failed`.
 */
import { LlmError, type LlmClientDescriptor, type LlmResponse } from './ports';
import { ABORTED, raceAbort } from './signals';
import { commit, type FrameContext } from './turn-context';
import type { WireMessage, WireTool } from './types';

export type ModelCall =
  | { kind: 'response'; response: LlmResponse; client: LlmClientDescriptor }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: string };

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
  const tried: string[] = [];
  const select = async (): Promise<LlmClientDescriptor | null> =>
    deps.llm.nextClient({
      agentId: fctx.agent.id,
      pinned: clientPin(fctx),
      strength: fctx.agent.strength,
      scope: fctx.agent.scope ?? null,
      tried: [...tried],
    });
  let client = await select();
  if (!client) {
    const error = 'no LLM client is available';
    await commit(fctx.turn, [], [{ type: 'llm_failed', tried: [], last_error: error }]);
    return { kind: 'failed', error };
  }
  let messages = await build(client.cacheControl);
  for (;;) {
    if (fctx.signal.aborted) return { kind: 'cancelled' };
    try {
      const response = await raceAbort(
        deps.llm.stream(client, { messages, tools }, fctx.signal, (d) =>
          deps.events.ephemeral({
            type: 'token_delta',
            session_id: session.id,
            message_id: messageId,
            kind: d.kind,
            delta: d.delta,
          }),
        ),
        fctx.signal,
      );
      if (response === ABORTED) return { kind: 'cancelled' };
      return { kind: 'response', response, client };
    } catch (error) {
      if (fctx.signal.aborted) return { kind: 'cancelled' };
      const message = error instanceof Error ? error.message : String(error);
      const retriable = error instanceof LlmError && error.retriable;
      tried.push(client.name);
      const next = retriable ? await select() : null;
      if (!next) {
        await commit(fctx.turn, [], [{ type: 'llm_failed', tried: [...tried], last_error: message }]);
        return { kind: 'failed', error: message };
      }
      await commit(fctx.turn, [], [{ type: 'model_fallback', from: client.name, to: next.name, reason: message }]);
      if (next.cacheControl !== client.cacheControl) messages = await build(next.cacheControl);
      client = next;
    }
  }
}
