import { INTERRUPTED_AFTER_START_NOTE } from '@skald/agent-loop';
import { DebugRow, SessionDetail, SessionSummary } from '@skald/contracts';
import type { ChatHistoryRow, SessionsRow, StackFramesRow, ToolCallsRow } from '@skald/persistence';
import { iso, parseToolArguments } from './row-format';
import type { DiscardedInboxRow, SessionListRow } from './sessions.repository';
const intOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function toSessionSummary(r: SessionListRow): SessionSummary {
  return {
    id: String(r.id),
    source: String(r.source),
    agent_id: String(r.agent_id),
    is_ephemeral: Boolean(r.is_ephemeral),
    is_interactive: Boolean(r.is_interactive),
    created_at: iso(r.created_at),
    message_count: Number(r.message_count ?? 0),
    last_message_at: r.last_message_at ? iso(r.last_message_at) : null,
    title: typeof r.title === 'string' ? r.title : null,
    is_active: Boolean(r.is_active),
    client: typeof r.client_pin === 'string' ? r.client_pin : null,
  };
}

/**
 * The debug tree of the spec: a flat, ordered list in which a sub-agent's rows stand between its
 * `agent` and `agent_end` rows, right after the tool call that spawned it. Inbox messages a `/stop`
 * discarded (`discarded`, oldest first) are `user` rows with status `discarded`, each before the
 * first top-level message stored after it was sent.
 */
export function toSessionDetail(
  session: SessionsRow,
  frames: StackFramesRow[],
  messages: ChatHistoryRow[],
  toolCalls: ToolCallsRow[],
  discarded: DiscardedInboxRow[] = [],
): SessionDetail {
  const callsByMessage = new Map<string, ToolCallsRow[]>();
  for (const c of toolCalls) {
    const list = callsByMessage.get(String(c.message_id)) ?? [];
    list.push(c);
    callsByMessage.set(String(c.message_id), list);
  }
  const messagesByFrame = new Map<string, ChatHistoryRow[]>();
  for (const m of messages) {
    const list = messagesByFrame.get(String(m.frame_id)) ?? [];
    list.push(m);
    messagesByFrame.set(String(m.frame_id), list);
  }
  const childFrames = new Map<string, StackFramesRow[]>();
  for (const f of frames) {
    const parentCall = f.parent_tool_call_id;
    if (parentCall) {
      const list = childFrames.get(parentCall) ?? [];
      list.push(f);
      childFrames.set(parentCall, list);
    }
  }

  const out: DebugRow[] = [];
  let nextDiscarded = 0;
  /** The discarded messages sent before `until` (all when null). */
  const emitDiscarded = (until: Date | null): void => {
    while (nextDiscarded < discarded.length) {
      const d = discarded[nextDiscarded];
      if (until !== null && new Date(d.created_at).getTime() >= until.getTime()) return;
      nextDiscarded += 1;
      const attachments = d.attachments as Extract<DebugRow, { kind: 'user' }>['attachments'] | null;
      out.push({
        kind: 'user',
        id: String(d.id),
        content: String(d.content),
        is_synthetic: Boolean(d.is_synthetic),
        status: 'discarded',
        attachments: attachments ?? undefined,
        created_at: iso(d.created_at),
      });
    }
  };
  const emitFrame = (frame: StackFramesRow): void => {
    const topLevel = !frame.parent_frame_id;
    for (const m of messagesByFrame.get(String(frame.id)) ?? []) {
      if (topLevel) emitDiscarded(new Date(m.created_at));
      const calls = callsByMessage.get(String(m.id)) ?? [];
      const synthetic = Boolean(m.is_synthetic);
      const superseded = m.status === 'superseded' ? { superseded: true } : {};
      if (m.role === 'assistant') {
        out.push({
          kind: calls.length > 0 ? 'thinking' : 'assistant',
          id: String(m.id),
          content: String(m.content),
          reasoning: m.reasoning ?? null,
          is_synthetic: synthetic,
          ...superseded,
          created_at: iso(m.created_at),
          input_tokens: intOrNull(m.input_tokens),
          output_tokens: intOrNull(m.output_tokens),
          cost_usd: m.cost_usd === null || m.cost_usd === undefined ? null : Number(m.cost_usd),
          tokens_estimated: Boolean(m.tokens_estimated),
          client: m.llm_client ?? null,
          model: m.llm_model ?? null,
        });
        for (const c of calls) {
          out.push({
            kind: 'tool',
            id: String(c.id),
            name: String(c.name),
            arguments: parseToolArguments(String(c.arguments)),
            status: c.status as 'done',
            result: c.result ?? (c.status === 'interrupted' ? INTERRUPTED_AFTER_START_NOTE : null),
            is_synthetic: synthetic,
            ...superseded,
            created_at: iso(c.created_at),
          });
          for (const child of childFrames.get(String(c.id)) ?? []) {
            const base = {
              stack_id: String(child.id),
              agent_id: String(child.agent_id),
              depth: Number(child.depth),
              is_synthetic: false,
            };
            out.push({ kind: 'agent', ...base, created_at: iso(child.created_at) });
            emitFrame(child);
            out.push({ kind: 'agent_end', ...base, created_at: iso(child.closed_at ?? child.created_at) });
          }
        }
      } else {
        const meta = m.metadata as { attachments?: DebugRow extends never ? never : unknown[] } | null;
        out.push({
          kind: 'user',
          id: String(m.id),
          content: String(m.content),
          is_synthetic: synthetic,
          ...superseded,
          status: m.status,
          attachments: (meta?.attachments as Extract<DebugRow, { kind: 'user' }>['attachments']) ?? undefined,
          created_at: iso(m.created_at),
        });
      }
    }
  };
  for (const root of frames.filter((f) => !f.parent_frame_id)) emitFrame(root);
  emitDiscarded(null);

  return {
    session: {
      id: String(session.id),
      title: typeof session.title === 'string' ? session.title : null,
      source: String(session.source),
      agent_id: String(session.agent_id),
      is_interactive: Boolean(session.is_interactive),
      is_ephemeral: Boolean(session.is_ephemeral),
      created_at: iso(session.created_at),
    },
    messages: out,
  };
}
