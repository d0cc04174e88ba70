import { useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from 'react';
import type { ChatMessages, Delivery, InboxDto, ServerFrame, SlashCommand } from '@skald/contracts';
import type { Api } from './api';
import { ApprovalCard, Markdown, QuestionCard, ToolCard, type Answerer } from './cards';
import { chatReducer, initialChat, waitingCardKey } from './chat-state';
import type { ChatConnection, ConnectionState } from '@skald/client';
import { HISTORY_PAGE } from './history/history-items';
import { timelineItems } from './outbox/outbox';
import { useOutbox } from './outbox/use-outbox';
import { shownOutbox, slotNotice } from './turn-slot/turn-slot';
import { shortcutFor } from './shortcuts/shortcuts';
import { TaskStrip, useTasks } from './tasks';
import { NotificationsStrip, useNotifications } from './notifications/notifications-strip';
import type { FrameHub } from './conversations/frame-hub';
import { RegenerateButton, UserMessage } from './conversations/message-actions';
import { ModelPicker } from './conversations/model-picker';
import { RunContextDialog } from './files/run-context';
import {
  AttachButton,
  AttachmentChips,
  FileViewer,
  PendingChips,
  pastedFiles,
  useAttachments,
  useFileDrop,
} from './files/attachments';

/** Attachments a vision model is given as images (the composer warns when the model cannot see them). */
const IMAGE_NAME = /\.(png|jpe?g|webp|gif)$/i;

/** The conversation of one source: stream, tool cards, inline approvals, stop, steer/queue/interrupt. */
export function Chat({ api, source, hub }: { api: Api; source: string; hub?: FrameHub }) {
  const [state, dispatch] = useReducer(chatReducer, initialChat);
  const [conn, setConn] = useState<ConnectionState>('connecting');
  const [draft, setDraft] = useState('');
  const [delivery, setDelivery] = useState<Delivery>('steer');
  const socket = useRef<ChatConnection | null>(null);
  const end = useRef<HTMLDivElement | null>(null);

  const [tasks, onTaskFrame] = useTasks(api, source);
  const { notifications, onFrame: onNotificationFrame, reload: reloadNotifications } = useNotifications(api);
  // files: attachments of the draft, drop and paste, the viewer (an `open_file` after the replay opens it)
  const attachments = useAttachments(api, source);
  const drop = useFileDrop(attachments.add);
  const [viewing, setViewing] = useState<string | null>(null);
  const [editingContext, setEditingContext] = useState(false);
  const live = useRef(false);
  // messages until they enter the conversation: the SDK's connection sends them (again after a
  // reconnect or an ack timeout, bounded); the outbox shows them pending, failed or queued
  const connection = useCallback(() => socket.current, []);
  const outbox = useOutbox(connection);
  const onOutboxFrame = outbox.onFrame;

  useEffect(() => {
    const onFrame = (f: ServerFrame) => {
      onOutboxFrame(f);
      dispatch(f);
      onTaskFrame(f);
      onNotificationFrame(f);
      hub?.emit(f);
      if (f.type === 'turn_running') live.current = true;
      if (f.type === 'open_file' && live.current) setViewing(f.path);
      if (f.type === 'command_result' && f.command === ('/clear' satisfies SlashCommand))
        void reloadNow.current().catch(() => undefined);
    };
    const onConn = (c: ConnectionState) => {
      if (c !== 'open') live.current = false;
      // notifications are user events, never replayed: after every (re)connect the REST list is their truth
      else reloadNotifications();
      setConn(c);
    };
    // history by REST: the latest page, then the socket resumes after the seq it covers
    const loadHistory = async (sessionId: string): Promise<number | null> => {
      const page = await api.get<ChatMessages>(`/api/${encodeURIComponent(source)}/messages?limit=${HISTORY_PAGE}`);
      if (page.session_id !== sessionId || page.resume_seq === undefined) return null;
      dispatch({ type: 'history', session_id: sessionId, items: page.items, has_more: page.has_more });
      return page.resume_seq;
    };
    // the SDK's chat connection: resumes after the page, reconnects (as long as the page is open) and resumes
    const s = api.client.connect({
      source,
      startAt: loadHistory,
      onFrame,
      onState: onConn,
      reconnect: { maxTries: Infinity },
    });
    socket.current = s;
    return () => s.stop();
  }, [api, source, onTaskFrame, hub, onOutboxFrame, onNotificationFrame, reloadNotifications]);

  // The view follows the end of the conversation, not an earlier page put before it.
  const lastKey = state.items.at(-1)?.key;
  useEffect(() => {
    end.current?.scrollIntoView?.({ block: 'end' });
  }, [lastKey]);
  // A card that waits for the user is scrolled into view, its heading first; while one waits the
  // composer stays in the flow under the timeline instead of floating over it.
  const waitingCard = waitingCardKey(state.items);
  useEffect(() => {
    if (waitingCard === null) return;
    document.querySelector(`[data-card-key="${CSS.escape(waitingCard)}"]`)?.scrollIntoView?.({ block: 'start' });
  }, [waitingCard]);

  // scroll-back: one earlier page at a time, while there is one; the rows in view stay in place
  const [loadingOlder, setLoadingOlder] = useState(false);
  const anchor = useRef<{ height: number; top: number } | null>(null);
  const loadOlder = async (): Promise<void> => {
    if (!state.older || loadingOlder) return;
    setLoadingOlder(true);
    const el = document.scrollingElement ?? document.documentElement;
    anchor.current = { height: el.scrollHeight, top: el.scrollTop };
    try {
      const page = await api.get<ChatMessages>(
        `/api/${encodeURIComponent(source)}/messages?before=${encodeURIComponent(state.older)}&limit=${HISTORY_PAGE}`,
      );
      dispatch({ type: 'history_older', session_id: page.session_id, items: page.items, has_more: page.has_more });
    } catch {
      anchor.current = null;
    } finally {
      setLoadingOlder(false);
    }
  };
  useLayoutEffect(() => {
    const a = anchor.current;
    if (!a) return;
    anchor.current = null;
    const el = document.scrollingElement ?? document.documentElement;
    el.scrollTop = a.top + (el.scrollHeight - a.height);
  }, [state.items]);
  const older = useRef<HTMLButtonElement | null>(null);
  const loadOlderNow = useRef(loadOlder);
  loadOlderNow.current = loadOlder;
  const hasOlder = state.older !== null;
  useEffect(() => {
    const el = older.current;
    if (!el || typeof IntersectionObserver === 'undefined') return;
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) void loadOlderNow.current();
    });
    seen.observe(el);
    return () => seen.disconnect();
  }, [hasOlder]);

  // /clear: the page by REST is the truth of what is left (nothing, when it cleared)
  const reloadHistory = async (): Promise<void> => {
    const page = await api.get<ChatMessages>(`/api/${encodeURIComponent(source)}/messages?limit=${HISTORY_PAGE}`);
    dispatch({
      type: 'history',
      session_id: page.session_id,
      items: page.items,
      has_more: page.has_more,
      replace: true,
    });
  };
  const reloadNow = useRef(reloadHistory);
  reloadNow.current = reloadHistory;

  const answer: Answerer = useMemo(
    () => ({
      approve: (requestId, session) =>
        socket.current?.send(
          session
            ? { type: 'approve_tool', request_id: requestId, bypass_scope: 'call', bypass_secs: session.secs }
            : { type: 'approve_tool', request_id: requestId },
        ),
      // The card can arrive before the request is registered: look a few times, then give up.
      sessionApproval: async (requestId) => {
        for (let attempt = 0; attempt < 6; attempt++) {
          const inbox = await api.get<InboxDto>('/api/inbox');
          const item = inbox.approvals.find((a) => a.request_id === requestId);
          if (item) return item.session_approval ?? null;
          await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
        }
        return null;
      },
      pendingCall: async (requestId) => {
        const inbox = await api.get<InboxDto>('/api/inbox');
        const item = inbox.approvals.find((a) => a.request_id === requestId);
        return item ? { toolName: item.tool_name, arguments: item.arguments } : null;
      },
      approveEdited: (requestId, args) =>
        api.post(`/api/inbox/approvals/${requestId}/resolve`, { action: 'approve', arguments: args }).then(
          () => null,
          (e: Error) => e.message,
        ),
      reject: (requestId, note) =>
        socket.current?.send(
          note ? { type: 'reject_tool', request_id: requestId, note } : { type: 'reject_tool', request_id: requestId },
        ),
      answer: (requestId, text) =>
        socket.current?.send({ type: 'answer_question', request_id: requestId, answer: text }),
    }),
    [api],
  );

  // the outbox under the timeline; a message held back at the user's cap on turns carries a notice
  const outgoing = shownOutbox(outbox.list, state);

  // conversations: regenerate, edit-and-resend, model choice (conversations/*)
  const sendFrame = (f: Parameters<ChatConnection['send']>[0]): boolean => socket.current?.send(f) ?? false;
  const lastAnswer = state.items.findLast((i) => i.kind === 'assistant' && i.depth === 0)?.key;

  const send = () => {
    const content = draft.trim();
    const files = attachments.ready;
    if (!content && files.length === 0) return;
    if (attachments.uploading) return;
    const frame = {
      type: 'message' as const,
      client_message_id: crypto.randomUUID(),
      content,
      ...(files.length > 0 && !content.startsWith('/') ? { attachments: files } : {}),
      ...(state.running && !content.startsWith('/') ? { delivery } : {}),
    };
    if (!content.startsWith('/')) {
      // shown as pending at once; the SDK sends it now or after a reconnect
      outbox.add(frame);
      setDraft('');
      attachments.clear();
      return;
    }
    if (socket.current?.send(frame)) setDraft('');
  };

  return (
    <main className={`chat${drop.dragging ? ' drop-target' : ''}`} aria-busy={state.running} {...drop.props}>
      {drop.dragging ? <p className="drop-hint">Drop files to attach them</p> : null}
      {editingContext && state.sessionId ? (
        <RunContextDialog api={api} sessionId={state.sessionId} onClose={() => setEditingContext(false)} />
      ) : null}
      {viewing ? <FileViewer api={api} path={viewing} onClose={() => setViewing(null)} /> : null}
      <div className="status-bar" role="status">
        <span className={`conn ${conn}`}>
          {conn === 'open' ? 'connected' : conn === 'connecting' ? 'connecting…' : 'offline, reconnecting…'}
        </span>
        {state.sessionId ? <a href={`#session/${state.sessionId}`}>session details</a> : null}
        {state.sessionId ? (
          <button type="button" className="link" onClick={() => setEditingContext(true)}>
            run context
          </button>
        ) : null}
        {state.running ? (
          <span className="running">{state.waiting ? `waiting for ${state.waiting}` : 'working…'}</span>
        ) : null}
      </div>
      <TaskStrip tasks={tasks} />
      <NotificationsStrip notifications={notifications} />
      {hasOlder ? (
        <button
          type="button"
          ref={older}
          className="link load-older"
          disabled={loadingOlder}
          onClick={() => void loadOlder()}
        >
          {loadingOlder ? 'Loading earlier messages…' : 'Load earlier messages'}
        </button>
      ) : null}
      <ol className="timeline" aria-live="polite">
        {timelineItems(state.items, outbox.list).map((i) => (
          <li key={i.key} className={`item ${i.kind}`} data-card-key={i.key}>
            {i.kind === 'user' ? (
              <UserMessage
                messageId={i.key.slice('user:'.length) || null}
                content={i.content}
                send={sendFrame}
                busy={state.running}
              >
                {i.attachments ? <AttachmentChips attachments={i.attachments} onOpen={setViewing} api={api} /> : null}
              </UserMessage>
            ) : i.kind === 'file' ? (
              <p className="file-event">
                {i.how === 'opened' ? 'Opened' : 'Changed'}{' '}
                <button type="button" className="link" onClick={() => setViewing(i.path)}>
                  {i.path}
                </button>
              </p>
            ) : i.kind === 'assistant' ? (
              <div className="bubble assistant-bubble" style={{ marginLeft: `${i.depth * 1.25}rem` }}>
                {i.reasoning ? (
                  <details className="reasoning">
                    <summary>Reasoning</summary>
                    <p>{i.reasoning}</p>
                  </details>
                ) : null}
                <Markdown text={i.content} />
                {i.key === lastAnswer && !state.running ? (
                  <div className="answer-actions">
                    <RegenerateButton send={sendFrame} disabled={state.running} />
                  </div>
                ) : null}
              </div>
            ) : i.kind === 'tool' ? (
              <ToolCard tool={i} />
            ) : i.kind === 'approval' ? (
              <ApprovalCard card={i} on={answer} me={api.auth.user.id} />
            ) : i.kind === 'question' ? (
              <QuestionCard card={i} on={answer} />
            ) : i.kind === 'agent' ? (
              <div className="agent" style={{ marginLeft: `${i.depth * 1.25}rem` }}>
                <strong>{i.agentId}</strong> {i.result === undefined ? 'working on' : 'finished'}:{' '}
                {i.result ?? i.prompt}
              </div>
            ) : (
              <p className={`notice ${i.level}`} role={i.level === 'error' ? 'alert' : undefined}>
                {i.text}
              </p>
            )}
          </li>
        ))}
        {outgoing.shown.map((o) => (
          <li key={`out:${o.frame.client_message_id}`} className={`item user outgoing ${o.state}`}>
            <div className="bubble user-bubble">
              <p>{o.frame.content}</p>
              {o.state === 'pending' ? (
                <p className="outgoing-state">sending…</p>
              ) : o.state === 'failed' ? (
                <p className="outgoing-state" role="alert">
                  {o.refused ? `Not sent: ${o.refused}.` : 'Not sent: the server did not confirm it.'}{' '}
                  <button type="button" className="link" onClick={() => outbox.retry(o.frame.client_message_id)}>
                    Retry
                  </button>
                </p>
              ) : null}
            </div>
            {o.frame.client_message_id === outgoing.waitingFor && state.slot ? (
              <p className="slot-wait">{slotNotice(state.slot.limit)}</p>
            ) : null}
          </li>
        ))}
        {state.slot && outgoing.waitingFor === null ? (
          <li key="slot-wait" className="item notice-item">
            <p className="slot-wait">{slotNotice(state.slot.limit, true)}</p>
          </li>
        ) : null}
      </ol>
      <form
        className={waitingCard === null ? 'composer' : 'composer beside-card'}
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
      >
        <label className="sr-only" htmlFor="composer-input">
          Message
        </label>
        <textarea
          id="composer-input"
          value={draft}
          rows={2}
          placeholder="Message Skald — / for commands"
          onChange={(e) => setDraft(e.target.value)}
          onPaste={(e) => {
            const files = pastedFiles(e);
            if (files.length === 0) return;
            e.preventDefault();
            attachments.add(files);
          }}
          data-shortcut="send"
          onKeyDown={(e) => {
            const s = shortcutFor(e.nativeEvent, { inComposer: true, inText: true });
            if (s?.id === 'send') {
              e.preventDefault();
              send();
            }
          }}
        />
        {state.running ? (
          <fieldset className="delivery">
            <legend className="sr-only">While the agent works</legend>
            {(['steer', 'queue', 'interrupt'] as const).map((d) => (
              <label key={d}>
                <input
                  type="radio"
                  name="delivery"
                  value={d}
                  checked={delivery === d}
                  onChange={() => setDelivery(d)}
                />
                {d}
              </label>
            ))}
          </fieldset>
        ) : null}
        {hub ? (
          <ModelPicker
            api={api}
            source={source}
            send={sendFrame}
            subscribe={hub.subscribe}
            imagesAttached={attachments.pending.some((p) => IMAGE_NAME.test(p.name))}
          />
        ) : null}
        <AttachButton onFiles={attachments.add} />
        <PendingChips at={attachments} />
        <button type="submit" disabled={attachments.uploading}>
          Send
        </button>
        {state.running ? (
          <button
            type="button"
            className="danger stop"
            data-shortcut="stop"
            onClick={() => socket.current?.send({ type: 'cancel' })}
          >
            Stop
          </button>
        ) : null}
      </form>
      <div ref={end} className="timeline-end" />
    </main>
  );
}
