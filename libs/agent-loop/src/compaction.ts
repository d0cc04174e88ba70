/**
 * Opt-in compaction (spec 000 "Context Building" 3): at turn start, when the projected context
 * passes the threshold, fold every row but the most recent ones into the frame's summary — the
 * existing summary is updated, never nested in the new one — and move the boundary; later
 * projections load only rows after it. `/compact` forces it. Never for ephemeral sessions or
 * sub-agents.
 */
import { buildFrameContext } from './history';
import { COMPACTION_SUMMARY_HEADER, flattenContext, toolResultContent } from './projection';
import { withLlmResilience } from './llm-call';
import type { LlmClientDescriptor } from './ports';
import { estimateTokens } from './tokens';
import { commit, isRoot, type FrameContext } from './turn-context';
import type { MessageRow, ToolCallRow } from './types';

/** The fixed sections of every summary, in order. */
export const SUMMARY_SECTIONS = [
  'Goal',
  'Key facts and decisions',
  'Files and resources',
  'Progress',
  'Open items',
] as const;

export const COMPACTION_PROMPT = [
  'You keep the running summary of a conversation between a user and an AI agent, so that the agent can go on with the work after the older messages are removed from its context.',
  'You get the current summary (possibly empty) and the messages to fold into it. Return the updated summary: the current one with the new information merged in. Do not summarise the summary, do not quote the current summary inside the new one, and do not mention that you are summarising.',
  'Use exactly these sections, in this order, each heading on a line of its own:',
  ...SUMMARY_SECTIONS.map((s) => `## ${s}`),
  'Under each heading write short bullet points ("- "); write "- (none)" when a section has nothing. Keep names, paths, commands, numbers, ids and the user\'s own requirements verbatim. Drop small talk and details that later messages made obsolete. Write nothing before the first heading or after the last section.',
].join('\n');

/** Longest tool result quoted to the summariser (the rest is elided). */
const TRANSCRIPT_RESULT_CHARS = 2_000;

export type CompactionResult =
  | { kind: 'compacted'; folded: number; kept: number; summary: string }
  | {
      kind: 'skipped';
      reason:
        'off' | 'ephemeral' | 'sub_agent' | 'under_threshold' | 'too_few_rows' | 'refused' | 'no_client' | 'failed';
      /** `refused`: the refusal's sentence (why no model may be called for the user now). */
      message?: string;
    }
  | { kind: 'cancelled' };

function elide(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more chars]` : text;
}

export function transcript(rows: MessageRow[], calls: ToolCallRow[]): string {
  const lines: string[] = [];
  for (const row of rows) {
    lines.push(`[${row.role}] ${row.content}`);
    for (const c of calls.filter((x) => x.messageId === row.id).sort((a, b) => a.index - b.index)) {
      lines.push(`[tool ${c.name}] ${c.argumentsText} → ${elide(toolResultContent(c), TRANSCRIPT_RESULT_CHARS)}`);
    }
  }
  return lines.join('\n');
}

/**
 * Brings the model's answer into the fixed template: every section present once, in order
 * ("- (none)" when empty); text outside a known section goes to "Key facts and decisions"; an
 * echoed summary header is dropped, so a summary never nests in another.
 */
export function normaliseSummary(text: string): string {
  const bodies = new Map<string, string[]>(SUMMARY_SECTIONS.map((s) => [s, []]));
  const fallback = 'Key facts and decisions';
  let current: string = fallback;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line.trim() === COMPACTION_SUMMARY_HEADER) continue;
    const heading = /^\s*#{1,6}\s*(.+?)\s*:?\s*$/.exec(line);
    if (heading) {
      const name = SUMMARY_SECTIONS.find((s) => s.toLowerCase() === heading[1].toLowerCase());
      if (name) {
        current = name;
        continue;
      }
    }
    if (line.trim() === '' || /^-\s*\(none\)$/i.test(line.trim())) continue;
    bodies.get(current)?.push(line);
  }
  return SUMMARY_SECTIONS.map((s) => {
    const body = bodies.get(s) ?? [];
    return `## ${s}\n${body.length > 0 ? body.join('\n') : '- (none)'}`;
  }).join('\n\n');
}

/**
 * Where to cut: keep at least `keepRecent` rows; move the cut back so the kept part starts with a
 * user (or agent) row when there is one before it, so a turn is never split from its question.
 * Returns how many rows to fold (0: nothing to fold).
 */
export function foldCount(rows: MessageRow[], keepRecent: number): number {
  const cut = rows.length - keepRecent;
  if (cut <= 0) return 0;
  for (let i = cut; i > 0; i--) if (rows[i].role !== 'assistant') return i;
  return cut;
}

/** Compaction at the start of a root turn: only over the threshold. */
export async function compactAtTurnStart(fctx: FrameContext): Promise<CompactionResult> {
  return compactFrame(fctx, { force: false });
}

export async function compactFrame(fctx: FrameContext, options: { force: boolean }): Promise<CompactionResult> {
  const { deps, session } = fctx.turn;
  const cfg = deps.config.compaction;
  if (!cfg) return { kind: 'skipped', reason: 'off' };
  if (session.isEphemeral) return { kind: 'skipped', reason: 'ephemeral' };
  if (!isRoot(fctx)) return { kind: 'skipped', reason: 'sub_agent' };
  if (!options.force) {
    const current = flattenContext(await buildFrameContext(fctx, { cacheControl: false, memoryFor: null }));
    if (estimateTokens(current) <= cfg.thresholdTokens) return { kind: 'skipped', reason: 'under_threshold' };
  }
  const existing = await deps.store.getCompaction(fctx.frame.id);
  const rows = await deps.store.listMessages(fctx.frame.id, { afterMessageId: existing?.boundaryMessageId ?? null });
  const n = foldCount(rows, cfg.keepRecent);
  if (n === 0) return { kind: 'skipped', reason: 'too_few_rows' };
  const folded = rows.slice(0, n);
  const who = {
    sessionId: fctx.turn.session.id,
    userId: fctx.turn.session.userId,
    agentId: fctx.agent.id,
    frameId: fctx.frame.id,
  };
  // A refused user (budget used up, agent or clients not allowed) gets no summary either, and is told why.
  const refused = deps.llm.admit ? await deps.llm.admit(who) : null;
  if (refused) return { kind: 'skipped', reason: 'refused', message: refused.message };
  const select = async (tried: string[]): Promise<LlmClientDescriptor | null> =>
    deps.llm.nextClient({ agentId: fctx.agent.id, scope: null, pinned: null, strength: cfg.strength, tried });
  const client = await select([]);
  if (!client) return { kind: 'skipped', reason: 'no_client' };
  const calls = await deps.store.listToolCalls(fctx.frame.id);
  const user = [
    `Current summary:\n${existing ? existing.summary : '(none yet)'}`,
    `Messages to fold into it (oldest first):\n${transcript(folded, calls)}`,
  ].join('\n\n');
  const messages = [
    { role: 'system' as const, content: COMPACTION_PROMPT },
    { role: 'user' as const, content: user },
  ];
  // The round's resilience (same-client retries, then other clients), announced nowhere: the
  // summary is the loop's own housekeeping, and a failure only leaves the history unfolded.
  const res = await withLlmResilience(fctx, client, select, {
    attempt: (c) =>
      deps.llm.stream(c, { messages, tools: [] }, fctx.signal, () => undefined, {
        ...who,
        messageId: null,
        purpose: 'compaction',
      }),
  });
  if (res.kind === 'cancelled') return { kind: 'cancelled' };
  if (res.kind === 'failed' || res.value.content.trim() === '') return { kind: 'skipped', reason: 'failed' };
  const summary = normaliseSummary(res.value.content);
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
  return { kind: 'compacted', folded: folded.length, kept: rows.length - folded.length, summary };
}
