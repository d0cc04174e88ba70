import type { HumanDecision, ChatMessageDto, ServerFrame } from '@skald/contracts';
import type { Item } from './chat-items';
import { attachmentsOf } from './files/attachment-frames';
import { historyItems, mergeItems } from './history/history-items';
import { refusedNoticeKey } from './outbox/outbox';
import { turnSign } from './turn-state/turn-state';

export type { Item } from './chat-items';

export interface ChatState {
  sessionId: string | null;
  items: Item[];
  running: boolean;
  waiting: 'approval' | 'clarification' | null;
  /**
   * The conversation's next message waits for one of the user's turn slots (`turn_waiting`, or
   * `turn_running` with `waiting: "turn_slot"` after a reconnect): the user's cap on conversations
   * answering at once (`limit`, null when not told) and the waiting message's client id when known.
   */
  slot: { limit: number | null; clientMessageId: string | null } | null;
  depth: number;
  /** The oldest history row shown when earlier ones exist (the `before` of the next page), else null. */
  older: string | null;
}

export const initialChat: ChatState = {
  sessionId: null,
  items: [],
  running: false,
  waiting: null,
  slot: null,
  depth: 0,
  older: null,
};

/** The key of the approval or question card that waits for the user (the latest), or null. */
export function waitingCardKey(items: readonly Item[]): string | null {
  const open = items.findLast(
    (i) => (i.kind === 'approval' && i.resolved === undefined) || (i.kind === 'question' && i.answered !== true),
  );
  return open?.key ?? null;
}

/**
 * A page of the conversation by REST, handed to the reducer as the screen loads it (not a server
 * frame): `history` the latest page (`replace`: after /clear it is the whole truth), `history_older`
 * an earlier one (scroll-back).
 */
export type HistoryFrame =
  | { type: 'history'; session_id: string | undefined; items: ChatMessageDto[]; has_more?: boolean; replace?: boolean }
  | { type: 'history_older'; session_id: string | undefined; items: ChatMessageDto[]; has_more?: boolean };

/** What the chat reducer folds: the socket's server frames and the REST history pages. */
export type ChatFrame = ServerFrame | HistoryFrame;

const OUTPUT_KEEP = 20_000;

function upsert(items: Item[], key: string, make: () => Item, change: (i: Item) => Item): Item[] {
  const at = items.findIndex((i) => i.key === key);
  if (at < 0) return [...items, make()];
  const next = items.slice();
  next[at] = change(items[at]!);
  return next;
}

function patchTool(items: Item[], id: string, patch: Partial<Extract<Item, { kind: 'tool' }>>): Item[] {
  return items.map((i) => (i.kind === 'tool' && i.key === `tool:${id}` ? { ...i, ...patch } : i));
}

function resolveCards(
  items: Item[],
  requestId: string,
  how: 'approved' | 'rejected' | 'cancelled',
  decision?: HumanDecision,
): Item[] {
  return items.map((i) =>
    i.kind === 'approval' && i.requestId === requestId && (!i.resolved || (decision && !i.decision))
      ? { ...i, resolved: i.resolved ?? how, ...(decision ? { decision } : {}) }
      : i.kind === 'question' && i.requestId === requestId
        ? { ...i, answered: true }
        : i,
  );
}

/**
 * Every server frame of the chat socket folded into what the screen shows. A session event (it
 * carries a `seq`) also says whether a turn runs (`SESSION_EVENT_TURN`): a client that joined
 * mid-turn or missed `turn_running` still shows the turn running, and sees it end.
 */
export function chatReducer(st: ChatState, f: ChatFrame): ChatState {
  const next = foldFrame(st, f);
  const turn = turnSign(f);
  if (turn === 'running' && !next.running) return { ...next, running: true };
  if (turn === 'ends' && (next.running || next.waiting !== null || next.depth !== 0))
    return { ...next, running: false, waiting: null, depth: 0 };
  return next;
}

function foldFrame(st: ChatState, f: ChatFrame): ChatState {
  switch (f.type) {
    case 'hello':
    case 'new_session':
      return f.session_id === st.sessionId ? st : { ...initialChat, sessionId: f.session_id };
    case 'turn_running': {
      // Sent after the replay: `approval_resolved` is not a session event, so a card left open by
      // the replay is settled from what the turn is doing now (the inbox is the truth of what waits).
      const running = f.running;
      const waiting = f.waiting === 'approval' || f.waiting === 'clarification' ? f.waiting : null;
      const slot =
        f.waiting === 'turn_slot'
          ? { limit: f.limit ?? null, clientMessageId: st.slot?.clientMessageId ?? null }
          : null;
      const open = st.items.filter((i) => i.kind === 'approval' && !i.resolved);
      const stillAsked = waiting === 'approval' ? open.at(-1)?.key : undefined;
      const items = st.items.map((i) =>
        i.kind === 'approval' && !i.resolved && i.key !== stillAsked
          ? { ...i, resolved: running ? ('approved' as const) : ('cancelled' as const) }
          : i,
      );
      return { ...st, running, waiting, slot, items };
    }
    case 'turn_waiting':
      if (f.session_id !== st.sessionId) return st;
      return {
        ...st,
        slot: { limit: f.limit, clientMessageId: f.client_message_id },
      };
    case 'history': {
      // The latest page of `GET /{source}/messages` (a client frame, not from the server): it comes
      // first; what the socket delivered while it loaded follows, unless the page holds it already.
      if (f.session_id !== st.sessionId) return st;
      const rows = f.items;
      // `replace` (after /clear): the page is the whole truth; only the command's own answer stays
      const last = st.items.at(-1);
      const kept = f.replace === true ? (last?.kind === 'notice' ? [last] : []) : st.items;
      return {
        ...st,
        items: mergeItems(historyItems(rows), kept),
        older: f.has_more === true && rows[0] ? rows[0].id : null,
      };
    }
    case 'history_older': {
      // scroll-back: an earlier page goes before everything shown; a row already shown is not doubled
      if (f.session_id !== st.sessionId) return st;
      const rows = f.items;
      return {
        ...st,
        items: mergeItems(historyItems(rows), st.items),
        older: f.has_more === true && rows[0] ? rows[0].id : null,
      };
    }
    case 'user_message': {
      const key = `user:${f.message_id}`;
      const item: Item = { kind: 'user', key, content: f.content, attachments: attachmentsOf(f) };
      // A message entered: the turn started, nothing waits for a slot any more.
      return {
        ...st,
        running: true,
        slot: null,
        items: upsert(
          st.items,
          key,
          () => item,
          (i) => i,
        ),
      };
    }
    case 'file_changed':
    case 'open_file':
      return {
        ...st,
        items: [
          ...st.items,
          {
            kind: 'file',
            key: `file:${f.seq}:${f.path}`,
            path: f.path,
            how: f.type === 'open_file' ? 'opened' : 'changed',
          },
        ],
      };
    case 'token_delta': {
      const key = `msg:${f.message_id}`;
      const add = f.delta;
      const reasoning = f.kind === 'reasoning';
      return {
        ...st,
        running: true,
        items: upsert(
          st.items,
          key,
          () => ({
            kind: 'assistant',
            key,
            content: reasoning ? '' : add,
            reasoning: reasoning ? add : '',
            streaming: true,
            depth: st.depth,
          }),
          (i) =>
            i.kind === 'assistant'
              ? {
                  ...i,
                  content: reasoning ? i.content : i.content + add,
                  reasoning: reasoning ? i.reasoning + add : i.reasoning,
                }
              : i,
        ),
      };
    }
    case 'thinking':
    case 'done': {
      const key = `msg:${f.message_id}`;
      const content = f.content;
      const reasoning = f.reasoning_content ?? '';
      const items = upsert(
        st.items,
        key,
        () => ({ kind: 'assistant', key, content, reasoning, streaming: false, depth: st.depth }),
        (i) => (i.kind === 'assistant' ? { ...i, content, reasoning: reasoning || i.reasoning, streaming: false } : i),
      );
      const dropEmpty = items.filter((i) => !(i.kind === 'assistant' && i.key === key && !i.content && !i.reasoning));
      return f.type === 'done'
        ? { ...st, items: dropEmpty, running: false, waiting: null, depth: 0 }
        : { ...st, items: dropEmpty };
    }
    case 'tool_start': {
      const item: Item = {
        kind: 'tool',
        key: `tool:${f.tool_call_id}`,
        name: f.name,
        label: f.label_short || f.name,
        args: f.arguments,
        status: 'running',
        output: '',
        result: '',
        depth: st.depth,
      };
      return {
        ...st,
        items: upsert(
          st.items,
          item.key,
          () => item,
          (i) => i,
        ),
      };
    }
    case 'tool_progress':
      return {
        ...st,
        items: st.items.map((i) =>
          i.kind === 'tool' && i.key === `tool:${f.tool_call_id}`
            ? { ...i, output: (i.output + f.chunk).slice(-OUTPUT_KEEP) }
            : i,
        ),
      };
    case 'tool_done':
      return settle(st, f.tool_call_id, 'approved', { status: 'done', result: f.result });
    case 'tool_error':
      return settle(st, f.tool_call_id, 'approved', { status: 'error', result: f.error });
    case 'tool_cancelled':
      return settle(st, f.tool_call_id, 'cancelled', { status: 'cancelled' });
    case 'tool_rejected':
      return settle(st, f.tool_call_id, 'rejected', { status: 'rejected', result: f.reason });
    case 'pending_write':
    case 'approval_required': {
      const card: Item = {
        kind: 'approval',
        key: `req:${f.request_id}`,
        requestId: f.request_id,
        toolCallId: f.tool_call_id,
        ...approvalShown(f),
        ...(f.lands_at !== undefined ? { landsAt: f.lands_at } : {}),
      };
      const items = patchTool(st.items, f.tool_call_id, { status: 'awaiting' });
      return {
        ...st,
        waiting: 'approval',
        items: upsert(
          items,
          card.key,
          () => card,
          (i) => i,
        ),
      };
    }
    case 'agent_question': {
      const card: Item = {
        kind: 'question',
        key: `req:${f.request_id}`,
        requestId: f.request_id,
        title: f.title,
        question: f.question,
        suggested: f.suggested_answers,
      };
      return {
        ...st,
        waiting: 'clarification',
        items: upsert(
          st.items,
          card.key,
          () => card,
          (i) => i,
        ),
      };
    }
    case 'approval_resolved': {
      const how = f.cancelled ? 'cancelled' : f.approved ? 'approved' : 'rejected';
      const toolKey = `tool:${f.tool_call_id}`;
      // an approved call runs now (its tool card leaves "waiting for approval")
      const items = resolveCards(st.items, f.request_id, how, f.decision).map((i) =>
        how === 'approved' && i.kind === 'tool' && i.key === toolKey && i.status === 'awaiting'
          ? { ...i, status: 'running' as const }
          : i,
      );
      return { ...st, waiting: null, items };
    }
    case 'clarification_resolved':
      return { ...st, waiting: null, items: resolveCards(st.items, f.request_id, 'approved') };
    case 'agent_start': {
      const item: Item = {
        kind: 'agent',
        key: `agent:${f.stack_id}`,
        agentId: f.agent_id,
        depth: st.depth,
        prompt: f.prompt_preview,
      };
      return {
        ...st,
        depth: st.depth + 1,
        items: upsert(
          st.items,
          item.key,
          () => item,
          (i) => i,
        ),
      };
    }
    case 'agent_done':
      return {
        ...st,
        depth: Math.max(0, st.depth - 1),
        items: st.items.map((i) =>
          i.kind === 'agent' && i.key === `agent:${f.stack_id}` ? { ...i, result: f.result_preview } : i,
        ),
      };
    case 'model_fallback':
      return notice(st, f, `Model ${f.from} failed (${f.reason}); using ${f.to}.`, 'info');
    case 'llm_failed':
      return notice(st, f, `No model answered: ${f.last_error}`, 'error');
    case 'notification':
      return notice(st, f, f.summary, 'info');
    case 'command_result':
      return notice(st, f, f.content, 'info');
    case 'message_discarded':
      return notice(
        st.slot?.clientMessageId === f.client_message_id ? { ...st, slot: null } : st,
        f,
        'A message was discarded by the stop.',
        'info',
      );
    case 'messages_superseded': {
      // edit: the conversation continues before this user message; regenerate (`keeps_message`):
      // the message stays and is answered again. What followed is gone either way.
      const at = st.items.findIndex((i) => i.key === `user:${f.from_message_id}`);
      // The turn that answers starts in the same commit.
      return at < 0 ? st : { ...st, running: true, items: st.items.slice(0, f.keeps_message === true ? at + 1 : at) };
    }
    case 'error': {
      // a refused frame (no seq) may name the message it refused
      const refused = 'client_message_id' in f ? f.client_message_id : undefined;
      const next = notice(st, f, f.message, 'error', refused);
      return f.code === 'interrupted' || f.code === 'llm_failed' || f.code === 'exhausted'
        ? { ...next, running: false, waiting: null, depth: 0 }
        : next;
    }
    // What the chat does not show: the outbox reads `ack`, the SDK `pong`, the model picker `client_selected`, the
    // inbox and the task list their events; `truncated` follows the `done` it qualifies.
    case 'ack':
    case 'pong':
    case 'client_selected':
    case 'approval_requested':
    case 'clarification_requested':
    case 'task_update':
    case 'truncated':
      return st;
    default: {
      const unhandled: never = f;
      return unhandled;
    }
  }
}

/** What an approval card shows: a command, a file's diff, or the call's arguments. */
function approvalShown(
  f: Extract<ChatFrame, { type: 'pending_write' | 'approval_required' }>,
): Pick<Extract<Item, { kind: 'approval' }>, 'toolName' | 'path' | 'oldContent' | 'newContent' | 'args'> {
  if (f.type === 'approval_required') return { toolName: f.tool_name, args: f.arguments };
  switch (f.kind) {
    case 'command':
      return { toolName: 'execute_cmd', newContent: f.new_content };
    case 'file':
      return { toolName: 'write', path: f.path ?? '', oldContent: f.old_content ?? '', newContent: f.new_content };
  }
}

/** A tool call ended: its card, and an approval card of it still open, show how. */
function settle(
  st: ChatState,
  id: string,
  how: 'approved' | 'rejected' | 'cancelled',
  patch: Partial<Extract<Item, { kind: 'tool' }>>,
): ChatState {
  const items = patchTool(st.items, id, patch).map((i) =>
    i.kind === 'approval' && i.toolCallId === id && !i.resolved ? { ...i, resolved: how } : i,
  );
  return { ...st, items };
}

let noticeCounter = 0;
/** `refusedCid`: the refused frame's client_message_id — the outbox row of that message tells it too. */
function notice(st: ChatState, f: ServerFrame, text: string, level: 'info' | 'error', refusedCid?: string): ChatState {
  const key =
    refusedCid !== undefined ? refusedNoticeKey(refusedCid) : 'seq' in f ? `seq:${f.seq}` : `notice:${++noticeCounter}`;
  if (st.items.some((i) => i.key === key)) return st;
  return { ...st, items: [...st.items, { kind: 'notice', key, text, level }] };
}
