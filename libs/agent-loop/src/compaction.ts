/**
 * Opt-in compaction: when the projected context passes the threshold, fold every row but the
 * most recent ones into the frame's summary (updating the existing summary, never nesting one
 * in another) and move the boundary; later projections load only rows after it.
 */
import { buildFrameMessages } from './history';
import { toolResultContent } from './projection';
import { ABORTED, raceAbort } from './signals';
import { commit, type FrameContext } from './turn-context';
import type { MessageRow, ToolCallRow, WireMessage } from './types';

export const COMPACTION_PROMPT =
  'You maintain the running summary of a conversation between a user and an AI agent. Merge the new messages into the existing summary and return ONE updated summary (facts, decisions, open tasks, file paths, results). Do not mention that you are summarising. Reply with the summary text only.';

/** Rough token estimate (4 characters a token). */
export function estimateTokens(messages: WireMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') chars += m.content.length;
    else if (Array.isArray(m.content)) for (const p of m.content) chars += p.text.length;
    if (m.role === 'assistant' && m.tool_calls) {
      for (const c of m.tool_calls) chars += c.function.name.length + c.function.arguments.length;
    }
  }
  return Math.ceil(chars / 4);
}

export function transcript(rows: MessageRow[], calls: ToolCallRow[]): string {
  const lines: string[] = [];
  for (const row of rows) {
    lines.push(`[${row.role}] ${row.content}`);
    for (const c of calls.filter((x) => x.messageId === row.id).sort((a, b) => a.index - b.index)) {
      lines.push(`[tool ${c.name}] ${c.argumentsText} → ${toolResultContent(c)}`);
    }
  }
  return lines.join('\n');
}

/** Returns `cancelled` if /stop hit the summarising call, `ok` otherwise (failures skip). */
export async function maybeCompact(fctx: FrameContext): Promise<'ok' | 'cancelled'> {
  const { deps } = fctx.turn;
  const cfg = deps.config.compaction;
  if (!cfg) return 'ok';
  const current = await buildFrameMessages(fctx, false);
  if (estimateTokens(current) <= cfg.thresholdTokens) return 'ok';
  const existing = await deps.store.getCompaction(fctx.frame.id);
  const rows = await deps.store.listMessages(fctx.frame.id, { afterMessageId: existing?.boundaryMessageId ?? null });
  if (rows.length <= cfg.keepRecent) return 'ok';
  const folded = rows.slice(0, rows.length - cfg.keepRecent);
  const who = {
    sessionId: fctx.turn.session.id,
    userId: fctx.turn.session.userId,
    agentId: fctx.agent.id,
    frameId: fctx.frame.id,
  };
  // A refused user (e.g. budget used up) gets no summary either; the round then says why.
  if (deps.llm.admit && (await deps.llm.admit(who))) return 'ok';
  const client = await deps.llm.nextClient({
    agentId: fctx.agent.id,
    scope: null,
    pinned: null,
    strength: cfg.strength,
    tried: [],
  });
  if (!client) return 'ok';
  const calls = await deps.store.listToolCalls(fctx.frame.id);
  const user = [
    existing ? `Existing summary:\n${existing.summary}` : 'Existing summary: (none)',
    `New messages:\n${transcript(folded, calls)}`,
  ].join('\n\n');
  let summary: string;
  try {
    const res = await raceAbort(
      deps.llm.stream(
        client,
        {
          messages: [
            { role: 'system', content: COMPACTION_PROMPT },
            { role: 'user', content: user },
          ],
          tools: [],
        },
        fctx.signal,
        () => undefined,
        { ...who, messageId: null, purpose: 'compaction' },
      ),
      fctx.signal,
    );
    if (res === ABORTED) return 'cancelled';
    summary = res.content.trim();
  } catch {
    return fctx.signal.aborted ? 'cancelled' : 'ok';
  }
  if (summary === '') return 'ok';
  await commit(
    fctx.turn,
    [
      {
        kind: 'setCompaction',
        summary: { frameId: fctx.frame.id, summary, boundaryMessageId: folded[folded.length - 1].id },
      },
    ],
    [],
  );
  return 'ok';
}
