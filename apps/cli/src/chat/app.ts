import type { ChatConnection, ConnectionState, SkaldClient } from '@skald/client';
import type { Delivery } from '@skald/contracts';
import { Box, Static, Text, useApp, useInput } from 'ink';
import TextInput from 'ink-text-input';
import { createElement as h, useEffect, useRef, useState, type ReactElement } from 'react';
import type { Line } from './format.ts';
import {
  itemLines,
  nextDelivery,
  outboxLines,
  pendingLines,
  statusLine,
  streamingLines,
  type ApprovalMode,
} from './render.ts';
import {
  answered,
  reduce,
  withNotice,
  withInboxItem,
  editableCommand,
  withSent,
  type ChatState,
  type Item,
  type Pending,
} from './state.ts';

/** Tries to read an approval's inbox item (its session scope) before the prompt shows it without one. */
const SCOPE_LOOKUPS = 3;

function LineView({ line }: { line: Line }): ReactElement {
  return h(
    Text,
    null,
    ...line.map((s, i) =>
      h(Text, { key: i, color: s.color, dimColor: s.dim ?? false, bold: s.bold ?? false }, s.text || ''),
    ),
  );
}

function Lines({ lines }: { lines: Line[] }): ReactElement {
  return h(Box, { flexDirection: 'column' }, ...lines.map((l, i) => h(LineView, { key: i, line: l })));
}

export interface ChatAppProps {
  client: SkaldClient;
  conn: ChatConnection;
  initial: ChatState;
  /** Shown once at the top: the server and the conversation. */
  banner: Line[];
  /** Called once when the app ends, with whether a turn was still running. */
  onExit: (runningAtExit: boolean) => void;
}

/**
 * `skald chat`: the transcript (rows printed once, scrolling as a terminal does), the tools that
 * run, the answer streaming, what waits for the user, the input and a status line.
 */
export function ChatApp(props: ChatAppProps): ReactElement {
  const { client, conn } = props;
  const { exit } = useApp();
  const [state, setState] = useState<ChatState>(props.initial);
  const [input, setInputState] = useState('');
  // What the input holds now: Enter can come before the render of the keys typed just before it.
  const inputRef = useRef('');
  const setInput = (v: string) => {
    inputRef.current = v;
    setInputState(v);
  };
  const [delivery, setDelivery] = useState<Delivery>('steer');
  const [connection, setConnection] = useState<ConnectionState>(conn.state);
  const [stopping, setStopping] = useState(false);
  const [mode, setMode] = useState<ApprovalMode>('keys');
  const looked = useRef(new Set<string>());
  const stateRef = useRef(state);
  stateRef.current = state;

  useEffect(() => {
    const offFrame = conn.onFrame((f) => setState((s) => reduce(s, f)));
    const offState = conn.onState((c) => {
      setConnection(c);
      if (c === 'closed' && conn.closedWith) {
        setState((s) => withNotice(s, `the connection ended: ${conn.closedWith?.message}`, 'error'));
      }
    });
    return () => {
      offFrame();
      offState();
    };
  }, [conn]);

  useEffect(() => {
    if (!state.running) setStopping(false);
  }, [state.running]);

  // An approval's narrow session scope is on its inbox item: read it once per request.
  const first = state.pending[0];
  useEffect(() => {
    if (!first || first.kind !== 'approval' || looked.current.has(first.requestId)) return;
    looked.current.add(first.requestId);
    const id = first.requestId;
    void (async () => {
      for (let i = 0; i < SCOPE_LOOKUPS; i++) {
        try {
          const inbox = await client.inbox();
          const item = inbox.approvals.find((a) => a.request_id === id);
          if (item) {
            const sa = item.session_approval;
            const args = item.arguments;
            setState((s) =>
              withInboxItem(s, id, {
                scopes: sa?.scopes ?? null,
                secs: sa?.secs ?? null,
                args:
                  args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : null,
              }),
            );
            return;
          }
        } catch {
          // the prompt works without the scope: approve and reject stay offered
        }
        await new Promise((r) => setTimeout(r, 300 * (i + 1)));
      }
    })();
  }, [first, client]);

  const quit = () => {
    props.onExit(stateRef.current.running);
    exit();
  };

  const answer = (p: Pending, how: 'approve' | 'session' | 'reject' | 'answer', text?: string) => {
    let sent = false;
    if (how === 'approve') sent = conn.approve(p.requestId);
    else if (how === 'session') sent = conn.approve(p.requestId, { bypass_scope: 'call' });
    else if (how === 'reject') sent = conn.reject(p.requestId, text || undefined);
    else sent = conn.answer(p.requestId, text ?? '');
    if (!sent) {
      // the socket is down: the REST form answers the same request
      const rest =
        how === 'answer'
          ? client.resolveClarification(p.requestId, text ?? '')
          : client.resolveApproval(p.requestId, {
              action: how === 'reject' ? 'reject' : 'approve',
              ...(how === 'reject' && text ? { note: text } : {}),
              ...(how === 'session' ? { bypass_scope: 'call' as const } : {}),
              channel: 'cli',
            });
      rest.catch((e: Error) => setState((s) => withNotice(s, `the answer was not sent: ${e.message}`, 'error')));
    }
    const label =
      how === 'approve'
        ? 'approved'
        : how === 'session'
          ? 'approved for this session'
          : how === 'reject'
            ? `rejected${text ? `: ${text}` : ''}`
            : `answered: ${text}`;
    setState((s) => withNotice(answered(s, p.requestId), label));
    setMode('keys');
    setInput('');
  };

  /**
   * Approves the command as edited. The card stays until `approval_resolved`: the gate judges the
   * edit again, and a refusal (an `error` naming the rule) leaves the call waiting for another answer.
   */
  const approveEdited = (p: Pending, command: string) => {
    setMode('keys');
    setInput('');
    const original = editableCommand(p);
    if (p.kind !== 'approval' || !p.args || original === null) return;
    if (!command.trim() || command === original) return answer(p, 'approve');
    const edited = { ...p.args, command };
    if (!conn.approve(p.requestId, { arguments: edited }))
      client
        .resolveApproval(p.requestId, { action: 'approve', arguments: edited, channel: 'cli' })
        .catch((e: Error) => setState((s) => withNotice(s, `the edited command was refused: ${e.message}`, 'error')));
    setState((s) => withNotice(s, `approving the edited command: $ ${command}`));
  };

  useInput((ch, key) => {
    if (key.ctrl && ch === 'c') {
      const s = stateRef.current;
      if (s.running && !stopping) {
        conn.cancel();
        setStopping(true);
        return;
      }
      quit();
      return;
    }
    if (key.ctrl && ch === 'd' && input === '') return quit();
    const p = stateRef.current.pending[0];
    if (p?.kind === 'approval') {
      if (mode !== 'keys') {
        if (key.escape) {
          setMode('keys');
          setInput('');
        }
        return;
      }
      const c = ch.toLowerCase();
      if (c === 'y') answer(p, 'approve');
      else if (c === 's' && p.scopes) answer(p, 'session');
      else if (c === 'e' && editableCommand(p) !== null) {
        setInput(editableCommand(p) ?? '');
        setMode('edit');
      } else if (c === 'n') {
        setInput('');
        setMode('note');
      }
      return;
    }
    if (key.tab && stateRef.current.running) setDelivery((d) => nextDelivery(d));
  });

  const submit = (raw: string) => {
    const text = raw.trim();
    const p = stateRef.current.pending[0];
    if (p?.kind === 'approval' && mode === 'note') return answer(p, 'reject', text);
    if (p?.kind === 'approval' && mode === 'edit') return approveEdited(p, raw.trim());
    if (p?.kind === 'question') {
      if (!text) return;
      const n = /^\d+$/.test(text) ? Number(text) : 0;
      return answer(p, 'answer', n >= 1 && n <= p.suggestions.length ? p.suggestions[n - 1] : text);
    }
    if (!text) return;
    setInput('');
    if (text === '/exit' || text === '/quit') return quit();
    if (text === '/stop') {
      conn.cancel();
      setStopping(stateRef.current.running);
      return;
    }
    try {
      const steering = stateRef.current.running && !text.startsWith('/');
      const turn = conn.message(text, steering ? { delivery } : {});
      if (!text.startsWith('/'))
        setState((s) => withSent(s, turn.clientMessageId, text, steering ? delivery : undefined));
    } catch (e) {
      setState((s) => withNotice(s, `not sent: ${(e as Error).message}`, 'error'));
    }
  };

  const pending = state.pending[0];
  const approvalKeys = pending?.kind === 'approval' && mode === 'keys';
  return h(
    Box,
    { flexDirection: 'column' },
    h(Static, {
      items: [{ kind: 'banner', key: 'banner' } as const, ...state.items],
      children: (row: unknown) => {
        const item = row as Item | { kind: 'banner'; key: string };
        return h(
          Box,
          { key: item.key, flexDirection: 'column', marginBottom: item.kind === 'assistant' ? 1 : 0 },
          h(Lines, { lines: item.kind === 'banner' ? props.banner : itemLines(item) }),
        );
      },
    }),
    ...state.active.map((t) => h(Lines, { key: t.key, lines: itemLines(t) })),
    h(Lines, { lines: streamingLines(state.streaming) }),
    h(Lines, { lines: outboxLines(state.outbox) }),
    pending ? h(Box, { marginTop: 1 }, h(Lines, { lines: pendingLines(pending, mode) })) : null,
    approvalKeys
      ? null
      : h(
          Box,
          { borderStyle: 'round', borderColor: pending ? 'magenta' : 'gray', paddingX: 1 },
          h(
            Text,
            { color: 'cyan' },
            mode === 'note' ? 'note › ' : mode === 'edit' ? 'command › ' : pending ? 'answer › ' : '› ',
          ),
          h(TextInput, {
            value: input,
            // a paste that ends a line sends it, as Enter would
            onChange: (v: string) => {
              const nl = v.search(/[\r\n]/);
              if (nl < 0) return setInput(v);
              setInput(v.slice(0, nl));
              submit(v.slice(0, nl));
            },
            onSubmit: () => submit(inputRef.current),
            placeholder:
              mode === 'note'
                ? 'why not (optional)…'
                : mode === 'edit'
                  ? 'the command to run…'
                  : pending
                    ? 'your answer…'
                    : state.running
                      ? `a message to ${delivery} the turn…`
                      : 'ask the agent…',
          }),
        ),
    h(LineView, {
      line: statusLine({ running: state.running, connection, delivery, stopping }),
    }),
  );
}
