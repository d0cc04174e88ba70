/**
 * Entry points besides turns: `/compact` (forced compaction of the root conversation; the caller
 * holds the lease) and `/context` (what the next request would hold, part by part; read-only).
 */
import { compactFrame, type CompactionResult } from './compaction';
import { buildFrameContext, offeredNames, roundTools } from './history';
import type { CompactionConfig, LoopDeps } from './ports';
import { frameContext } from './recovery';
import { startTurn } from './run-turn';
import { estimateTokens, estimateToolTokens } from './tokens';
import type { TurnContext } from './turn-context';
import type { FrameRow } from './types';

export type CompactSessionResult =
  | CompactionResult
  /** A turn is running or waiting for a human: its rows may not move behind a boundary. */
  | { kind: 'skipped'; reason: 'busy' | 'empty' };

async function rootFrame(turn: TurnContext): Promise<FrameRow | null> {
  return (await turn.deps.store.listActiveFrames(turn.session.id)).find((f) => f.depth === 0) ?? null;
}

/** `/compact`: fold all but the recent rows now, whatever the size. The caller holds the lease. */
export async function compactSession(
  deps: LoopDeps,
  request: { sessionId: string; signal?: AbortSignal },
): Promise<CompactSessionResult> {
  const turn = await startTurn(deps, request.sessionId, request.signal);
  if (turn.session.turnState !== 'finished') return { kind: 'skipped', reason: 'busy' };
  const root = await rootFrame(turn);
  if (!root) return { kind: 'skipped', reason: 'empty' };
  return compactFrame(await frameContext(turn, root), { force: true });
}

export type ContextPartName = 'system' | 'scratchpad' | 'summary' | 'history' | 'dynamic_tail' | 'tail_reminder';

export interface ContextReport {
  agentId: string;
  /** Every part in the order it is sent; absent parts have 0 messages. */
  parts: Array<{ part: ContextPartName; messages: number; tokens: number }>;
  tools: { count: number; tokens: number };
  /** Messages + tools. */
  totalTokens: number;
  /** Stored rows of the conversation after the compaction boundary. */
  historyRows: number;
  compaction: CompactionConfig | null;
  contextBudgetTokens: number | null;
}

/** `/context`: the next request of the session's root conversation, measured part by part. */
export async function describeContext(deps: LoopDeps, request: { sessionId: string }): Promise<ContextReport> {
  const turn = await startTurn(deps, request.sessionId);
  const root: FrameRow = (await rootFrame(turn)) ?? {
    id: deps.ids.newId(),
    sessionId: turn.session.id,
    parentFrameId: null,
    parentToolCallId: null,
    agentId: turn.session.agentId,
    depth: 0,
    status: 'active',
    clientPin: null,
  };
  const fctx = await frameContext(turn, root);
  const tools = await roundTools(fctx);
  const ctx = await buildFrameContext(fctx, { cacheControl: false, memoryFor: offeredNames(tools) });
  const one = (part: ContextPartName, m: (typeof ctx)['scratchpad']) => ({
    part,
    messages: m ? 1 : 0,
    tokens: m ? estimateTokens([m]) : 0,
  });
  const parts = [
    one('system', ctx.system),
    one('scratchpad', ctx.scratchpad),
    one('summary', ctx.summary),
    { part: 'history' as const, messages: ctx.history.length, tokens: estimateTokens(ctx.history) },
    one('dynamic_tail', ctx.dynamicTail),
    one('tail_reminder', ctx.tailReminder),
  ];
  const toolTokens = estimateToolTokens(tools);
  const compaction = deps.config.compaction ? await deps.store.getCompaction(root.id) : null;
  const rows = await deps.store.listMessages(root.id, { afterMessageId: compaction?.boundaryMessageId ?? null });
  return {
    agentId: fctx.agent.id,
    parts,
    tools: { count: tools.length, tokens: toolTokens },
    totalTokens: parts.reduce((n, p) => n + p.tokens, 0) + toolTokens,
    historyRows: rows.length,
    compaction: deps.config.compaction,
    contextBudgetTokens: deps.config.contextBudgetTokens,
  };
}
