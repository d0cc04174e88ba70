import type { BypassScope, ChatMessages, ServerFrame } from '@skald/contracts';
import { diffLines, head, toolDetail, type Line } from './format.ts';

type HistoryMessage = ChatMessages['items'][number];

export type ToolStatus = 'running' | 'done' | 'error' | 'rejected' | 'cancelled';

/** One row of the transcript. Rows in `ChatState.items` are final: they are printed once and scroll away. */
export type Item =
  | { kind: 'user'; key: string; text: string }
  | { kind: 'assistant'; key: string; text: string }
  | { kind: 'reasoning'; key: string; text: string }
  | { kind: 'tool'; key: string; name: string; detail: string; status: ToolStatus; result?: string }
  | { kind: 'notice'; key: string; text: string; tone: 'info' | 'warn' | 'error' };

/** What waits for the user's answer in the chat: an approval (with what it would do) or a question. */
export type Pending =
  | {
      kind: 'approval';
      requestId: string;
      toolCallId: string;
      tool: string;
      /** The command, or the file and its diff. */
      title: string;
      body: Line[];
      /** What "approve for this session" opens (from the inbox item); null when the call cannot be narrowed. */
      scopes: BypassScope[] | null;
      secs: number | null;
      /** The call's arguments (from the inbox item), which an edit starts from; null until read. */
      args: Record<string, unknown> | null;
    }
  | { kind: 'question'; requestId: string; toolCallId: string; title: string; question: string; suggestions: string[] };

export interface ChatState {
  items: Item[];
  /** Tools that have started and not ended (shown below the final rows). */
  active: Item[];
  /** The text and reasoning streaming now (token deltas), until the message they make is stored. */
  streaming: { content: string; reasoning: string };
  pending: Pending[];
  /** Messages sent that have not entered the conversation yet (a steer or queue waits for its moment). */
  outbox: Array<{ clientMessageId: string; text: string; delivery?: string }>;
  running: boolean;
  sessionId: string | null;
  /** Message ids shown already (the history page, replays after it): each row shows once. */
  seen: ReadonlySet<string>;
  /** How many rows were made: keys stay unique when the same text comes twice. */
  counter: number;
}

export function initialState(): ChatState {
  return {
    items: [],
    active: [],
    streaming: { content: '', reasoning: '' },
    pending: [],
    outbox: [],
    running: false,
    sessionId: null,
    seen: new Set(),
    counter: 0,
  };
}

/** A row before it has a key: `push` gives it one unless it names its own. */
type NewItem = Item extends infer I ? (I extends Item ? Omit<I, 'key'> & { key?: string } : never) : never;

function push(s: ChatState, ...rows: NewItem[]): ChatState {
  let counter = s.counter;
  const added: Item[] = rows.map((r) => ({ ...r, key: r.key ?? `row-${++counter}` }));
  return { ...s, items: [...s.items, ...added], counter };
}

function notice(s: ChatState, text: string, tone: 'info' | 'warn' | 'error' = 'info'): ChatState {
  return push(s, { kind: 'notice', text, tone });
}

function see(s: ChatState, id: string): ChatState {
  const seen = new Set(s.seen);
  seen.add(id);
  return { ...s, seen };
}

/** The first line of a tool's result, as the row shows it. */
function short(text: string): string {
  const first = text.trim().split('\n')[0] ?? '';
  return first.length > 200 ? `${first.slice(0, 199)}…` : first;
}

function endTool(state: ChatState, id: string, status: ToolStatus, result?: string): ChatState {
  // a call that ended waits for no answer any more (answered elsewhere, or the turn moved on)
  const s = { ...state, pending: state.pending.filter((p) => p.toolCallId !== id) };
  const at = s.active.findIndex((t) => t.key === `tool-${id}`);
  if (at < 0) return s;
  const row = s.active[at] as Extract<Item, { kind: 'tool' }>;
  const active = s.active.filter((_, i) => i !== at);
  return push(see({ ...s, active }, row.key), {
    ...row,
    status,
    ...(result !== undefined ? { result: short(result) } : {}),
  });
}

/** The rows of a history page (`GET /{source}/messages`), each message once. */
export function withHistory(s: ChatState, page: ChatMessages): ChatState {
  let out: ChatState = { ...s, sessionId: page.session_id ?? s.sessionId };
  for (const m of page.items) out = withHistoryMessage(out, m);
  return out;
}

function withHistoryMessage(s: ChatState, m: HistoryMessage): ChatState {
  if (s.seen.has(m.id)) return s;
  let out = see(s, m.id);
  if (m.role === 'user') return push(out, { kind: 'user', key: `msg-${m.id}`, text: m.content });
  // the text of a message with tool calls came before them (a `thinking`); a final answer has none
  const calls = m.tool_calls ?? [];
  if (calls.length > 0 && m.content.trim()) out = push(out, { kind: 'assistant', key: `msg-${m.id}`, text: m.content });
  for (const t of calls) {
    out = see(out, `tool-${t.id}`);
    const status: ToolStatus =
      t.status === 'done'
        ? 'done'
        : t.status === 'rejected'
          ? 'rejected'
          : t.status === 'cancelled' || t.status === 'interrupted'
            ? 'cancelled'
            : t.status === 'failed'
              ? 'error'
              : 'running';
    out = push(out, {
      kind: 'tool',
      key: `hist-tool-${t.id}`,
      name: t.name,
      detail: toolDetail(t.name, t.arguments),
      status,
      ...(t.result ? { result: short(t.result) } : {}),
    });
  }
  if (calls.length === 0 && m.content.trim())
    out = push(out, { kind: 'assistant', key: `msg-${m.id}`, text: m.content });
  return out;
}

/** The chat after one frame of the connection. Pure: the same frames give the same screen. */
export function reduce(s: ChatState, f: ServerFrame): ChatState {
  switch (f.type) {
    case 'hello':
      return { ...s, sessionId: f.session_id };
    case 'new_session':
      return notice({ ...s, sessionId: f.session_id, pending: [], active: [] }, `new conversation ${f.session_id}`);
    case 'turn_running':
      return { ...s, running: f.running };
    case 'user_message': {
      s = { ...s, outbox: s.outbox.filter((m) => m.clientMessageId !== f.client_message_id) };
      if (s.seen.has(f.message_id)) return { ...s, running: true };
      const attached = f.attachments?.length ? ` [${f.attachments.map((a) => a.name).join(', ')}]` : '';
      return push(see({ ...s, running: true }, f.message_id), {
        kind: 'user',
        key: `msg-${f.message_id}`,
        text: f.content + attached,
      });
    }
    case 'token_delta': {
      const streaming =
        f.kind === 'reasoning'
          ? { ...s.streaming, reasoning: s.streaming.reasoning + f.delta }
          : { ...s.streaming, content: s.streaming.content + f.delta };
      return { ...s, streaming, running: true };
    }
    case 'thinking':
    case 'done': {
      let out: ChatState = { ...s, streaming: { content: '', reasoning: '' } };
      if (s.seen.has(f.message_id)) return f.type === 'done' ? { ...out, running: false, pending: [] } : out;
      out = see(out, f.message_id);
      if (f.reasoning_content?.trim()) out = push(out, { kind: 'reasoning', text: f.reasoning_content.trim() });
      if (f.content.trim()) out = push(out, { kind: 'assistant', key: `msg-${f.message_id}`, text: f.content });
      return f.type === 'done' ? { ...out, running: false, pending: [] } : out;
    }
    case 'tool_start': {
      const row: Item = {
        kind: 'tool',
        key: `tool-${f.tool_call_id}`,
        name: f.name,
        detail: toolDetail(f.name, f.arguments, f.path),
        status: 'running',
      };
      // a replay of a tool already shown (running, or ended above)
      if (s.seen.has(row.key) || s.active.some((t) => t.key === row.key)) return s;
      return { ...s, active: [...s.active, row], running: true };
    }
    case 'tool_done':
      return endTool(s, f.tool_call_id, 'done', f.result);
    case 'tool_error':
      return endTool(s, f.tool_call_id, 'error', f.error);
    case 'tool_rejected':
      return endTool(s, f.tool_call_id, 'rejected', f.reason);
    case 'tool_cancelled':
      return endTool(s, f.tool_call_id, 'cancelled');
    case 'pending_write': {
      if (s.pending.some((p) => p.requestId === f.request_id)) return s;
      const command = f.kind === 'command';
      const p: Pending = {
        kind: 'approval',
        requestId: f.request_id,
        toolCallId: f.tool_call_id,
        tool: command ? 'execute_cmd' : 'file write',
        title: command ? f.new_content : `write ${f.path ?? 'a file'}`,
        body: command ? [] : diffLines(f.old_content, f.new_content),
        scopes: null,
        secs: null,
        args: null,
      };
      return { ...s, pending: [...s.pending, p] };
    }
    case 'approval_required': {
      if (s.pending.some((p) => p.requestId === f.request_id)) return s;
      const args = typeof f.arguments === 'string' ? f.arguments : JSON.stringify(f.arguments, null, 2);
      // an edit (`old` → `new`) reads best as the diff it makes
      const a = typeof f.arguments === 'object' && f.arguments !== null ? f.arguments : {};
      const edit = typeof a.old === 'string' && typeof a.new === 'string' ? diffLines(a.old, a.new) : null;
      const p: Pending = {
        kind: 'approval',
        requestId: f.request_id,
        toolCallId: f.tool_call_id,
        tool: f.tool_name,
        title: `${f.tool_name} ${toolDetail(f.tool_name, f.arguments)}`.trim(),
        body: edit ?? head(args, 20).map((text): Line => [{ text, dim: true }]),
        scopes: null,
        secs: null,
        args: null,
      };
      return { ...s, pending: [...s.pending, p] };
    }
    case 'agent_question': {
      if (s.pending.some((p) => p.requestId === f.request_id)) return s;
      const p: Pending = {
        kind: 'question',
        requestId: f.request_id,
        toolCallId: f.tool_call_id,
        title: f.title,
        question: f.question,
        suggestions: f.suggested_answers,
      };
      return { ...s, pending: [...s.pending, p] };
    }
    case 'approval_resolved':
    case 'clarification_resolved':
      return { ...s, pending: s.pending.filter((p) => p.requestId !== f.request_id) };
    case 'agent_start':
      return notice(s, `↳ ${f.agent_id}: ${f.prompt_preview}`);
    case 'agent_done':
      return notice(s, `↲ ${f.agent_id}: ${f.result_preview}`);
    case 'error': {
      const ended = 'seq' in f;
      const refused =
        !ended && f.client_message_id ? s.outbox.find((o) => o.clientMessageId === f.client_message_id) : undefined;
      const text =
        f.code === 'interrupted'
          ? 'stopped'
          : `${refused ? `not sent: "${refused.text}": ` : 'error: '}${f.message}${f.code ? ` (${f.code})` : ''}`;
      // what streamed before the turn ended stays on the screen, as in the conversation's history
      let kept = refused ? { ...s, outbox: s.outbox.filter((o) => o !== refused) } : s;
      if (ended && s.streaming.reasoning.trim())
        kept = push(kept, { kind: 'reasoning', text: s.streaming.reasoning.trim() });
      if (ended && s.streaming.content.trim()) kept = push(kept, { kind: 'assistant', text: s.streaming.content });
      const out = notice(kept, text, f.code === 'interrupted' ? 'warn' : 'error');
      return ended
        ? { ...out, running: false, pending: [], active: [], streaming: { content: '', reasoning: '' } }
        : out;
    }
    case 'message_discarded': {
      const m = s.outbox.find((o) => o.clientMessageId === f.client_message_id);
      const out = { ...s, outbox: s.outbox.filter((o) => o !== m) };
      return notice(out, `not sent${m ? `: "${m.text}"` : ''} (the turn was stopped before it entered)`, 'warn');
    }
    case 'messages_superseded':
      return notice(s, 'the conversation was rewound from an earlier message (regenerate or edit)');
    case 'command_result':
      return notice(s, f.content);
    case 'model_fallback':
      return notice(
        s,
        f.from === f.to ? `retrying ${f.to}: ${f.reason}` : `model ${f.from} → ${f.to}: ${f.reason}`,
        'warn',
      );
    case 'llm_failed':
      return notice(s, `the model failed: ${f.last_error}`, 'error');
    case 'open_file':
      return notice(s, `the agent shows ${f.path}`);
    case 'truncated':
      return notice(s, 'the answer was cut at the output limit', 'warn');
    case 'notification':
      return notice(s, `notice: ${f.summary}`);
    case 'task_update':
      return f.state === 'running' ? s : notice(s, `task ${f.title}: ${f.state}${f.error ? ` (${f.error})` : ''}`);
    case 'ack':
    case 'pong':
    case 'turn_waiting':
    case 'tool_progress':
    case 'file_changed':
    case 'client_selected':
    case 'approval_requested':
    case 'clarification_requested':
      // nothing to show: the prompt comes with the session's own request event, the rows with their echo
      return s;
  }
}

/** The inbox item of an approval tells what "for this session" would open: fill it in. */
export function withInboxItem(
  s: ChatState,
  requestId: string,
  item: { scopes: BypassScope[] | null; secs: number | null; args: Record<string, unknown> | null },
): ChatState {
  return {
    ...s,
    pending: s.pending.map((p) => (p.kind === 'approval' && p.requestId === requestId ? { ...p, ...item } : p)),
  };
}

/** The command an approval of `execute_cmd` would run, once its arguments are known: what `e` edits. */
export function editableCommand(p: Pending): string | null {
  if (p.kind !== 'approval' || p.tool !== 'execute_cmd') return null;
  return typeof p.args?.command === 'string' ? p.args.command : null;
}

/** A message the user sent: shown as waiting until it enters the conversation. */
export function withSent(s: ChatState, clientMessageId: string, text: string, delivery?: string): ChatState {
  return { ...s, outbox: [...s.outbox, { clientMessageId, text, ...(delivery ? { delivery } : {}) }] };
}

/** The answered request leaves the prompt (the server's `*_resolved` comes to every socket too). */
export function answered(s: ChatState, requestId: string): ChatState {
  return { ...s, pending: s.pending.filter((p) => p.requestId !== requestId) };
}

export function withNotice(s: ChatState, text: string, tone: 'info' | 'warn' | 'error' = 'info'): ChatState {
  return notice(s, text, tone);
}
