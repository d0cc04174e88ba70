import { memo, useEffect, useRef, useState } from 'react';
import { webSources, type WebSource } from '@skald/contracts/web-sources';
import { useCodeBlocks } from './polish/code-blocks';
import type { Item } from './chat-state';
import { describeDecision, describeScope, describeSecs, expiryFromNow, type SessionApproval } from './scopes';
import { Diff } from './diff-view';
import { renderMarkdown } from './markdown';
import { canEdit, EditCall } from './edit-call';

type Approval = Extract<Item, { kind: 'approval' }>;
type Question = Extract<Item, { kind: 'question' }>;

export interface Answerer {
  /** `session`: also approve this call's narrow scope (`bypass_scope: "call"`) for that many seconds. */
  approve(requestId: string, session: { secs: number } | null): void;
  /** What "approve for this session" would open for this request (null: nothing can be narrowed). */
  sessionApproval(requestId: string): Promise<SessionApproval | null>;
  reject(requestId: string, note: string): void;
  answer(requestId: string, answer: string): void;
  /** The call as the approval service holds it (what an edit starts from); null: not found. */
  pendingCall(requestId: string): Promise<{ toolName: string; arguments: unknown } | null>;
  /** Approves the call with edited arguments: resolves with the refusal's message, or null when approved. */
  approveEdited(requestId: string, args: Record<string, unknown>): Promise<string | null>;
}

/**
 * Memoised: re-rendered only when its text changes, so a render of the chat for anything else never
 * sets the HTML again (which would drop the code blocks' highlighting and Copy buttons).
 */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  const ref = useRef<HTMLDivElement | null>(null);
  useCodeBlocks(ref, text);
  return <div ref={ref} className="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(text) }} />;
});

/**
 * An approval: the diff of a write, the command of execute_cmd, the arguments of anything else.
 * `on` null: read only (another user's conversation), an open approval shown without its buttons.
 */
export function ApprovalCard({
  card,
  on,
  me = null,
  named,
}: {
  card: Approval;
  on: Answerer | null;
  me?: string | null;
  /** Who else may have answered, by user id (the owner of a conversation an admin reads). */
  named?: ReadonlyMap<string, string>;
}) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [session, setSession] = useState<SessionApproval | null>(null);
  const [editing, setEditing] = useState<{ toolName: string; args: Record<string, unknown> } | null>(null);
  const [editError, setEditError] = useState('');
  useEffect(() => {
    if (card.resolved || !on) return;
    let live = true;
    on.sessionApproval(card.requestId).then(
      (s) => live && setSession(s),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [on, card.requestId, card.resolved]);
  const title =
    card.toolName === 'execute_cmd'
      ? 'Run this command?'
      : card.path
        ? `Write ${card.path}?`
        : `Allow ${card.toolName}?`;
  return (
    <section className="card approval" aria-label={`approval: ${title}`} tabIndex={-1}>
      <h3>{title}</h3>
      {card.landsAt ? (
        <p className="lands-at">
          lands at <code>{card.landsAt}</code>
        </p>
      ) : null}
      {card.toolName === 'execute_cmd' ? (
        <pre className="command">{card.newContent}</pre>
      ) : card.path && card.newContent !== undefined ? (
        <Diff oldText={card.oldContent ?? ''} newText={card.newContent ?? ''} />
      ) : (
        <pre className="args">{JSON.stringify(card.args, null, 2)}</pre>
      )}
      {card.resolved ? (
        <p className={`verdict ${card.resolved}`}>
          {/* the outcome its own element: read (and found) apart from who decided and when */}
          <strong>
            {card.resolved === 'approved' ? 'Approved' : card.resolved === 'rejected' ? 'Rejected' : 'Cancelled'}
          </strong>
          {card.decision ? (
            <span className="decided">
              {' '}
              {describeDecision(card.decision, me, named)},{' '}
              <time dateTime={card.decision.at}>{new Date(card.decision.at).toLocaleString()}</time>
            </span>
          ) : null}
        </p>
      ) : !on ? (
        <p className="verdict waiting">
          <strong>Not answered yet</strong>
        </p>
      ) : editing ? (
        <EditCall
          id={card.requestId}
          toolName={editing.toolName}
          args={editing.args}
          {...(card.path ? { preview: { path: card.path, oldContent: card.oldContent } } : {})}
          busy={busy}
          error={editError}
          onCancel={() => (setEditing(null), setEditError(''))}
          onApprove={(edited) => {
            setBusy(true);
            setEditError('');
            void on.approveEdited(card.requestId, edited).then((refused) => {
              setBusy(false);
              if (refused) setEditError(refused);
              else setEditing(null);
            });
          }}
        />
      ) : (
        <div className="actions">
          <button
            type="button"
            data-shortcut="approve"
            aria-keyshortcuts="A"
            disabled={busy}
            onClick={() => (setBusy(true), on.approve(card.requestId, null))}
          >
            Approve
          </button>
          {session ? (
            <button
              type="button"
              disabled={busy}
              aria-describedby={`scope-${card.requestId}`}
              onClick={() => (setBusy(true), on.approve(card.requestId, { secs: session.secs }))}
            >
              Approve for this session ({describeSecs(session.secs)})
            </button>
          ) : null}
          {session ? (
            <p className="session-scope" id={`scope-${card.requestId}`}>
              Until {expiryFromNow(session.secs)} this session runs without asking:{' '}
              {session.scopes.map(describeScope).join('; ')}. Wider approvals are in the inbox.
            </p>
          ) : null}
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              void on.pendingCall(card.requestId).then((call) => {
                if (call && canEdit(call.toolName, call.arguments))
                  setEditing({ toolName: call.toolName, args: call.arguments });
                else setEditError('This call cannot be edited: approve or reject it as it is.');
              })
            }
          >
            Edit
          </button>
          {editError ? <p role="alert">{editError}</p> : null}
          <label className="note">
            <span>Note</span>
            <input value={note} onChange={(e) => setNote(e.target.value)} placeholder="why not (the agent reads it)" />
          </label>
          <button
            type="button"
            className="danger"
            data-shortcut="reject"
            aria-keyshortcuts="R"
            disabled={busy}
            onClick={() => (setBusy(true), on.reject(card.requestId, note))}
          >
            Reject
          </button>
        </div>
      )}
      {card.resolved && card.decision?.note ? (
        <p className="decision-note">
          Note: <q>{card.decision.note}</q>
        </p>
      ) : null}
    </section>
  );
}

export function QuestionCard({ card, on }: { card: Question; on: Answerer }) {
  const [answer, setAnswer] = useState('');
  return (
    <section className="card question" aria-label={`question: ${card.title}`}>
      <h3>{card.title}</h3>
      <p>{card.question}</p>
      {card.answered ? (
        <p className="verdict approved">Answered</p>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (answer.trim()) on.answer(card.requestId, answer.trim());
          }}
        >
          <div className="suggested">
            {card.suggested.map((s) => (
              <button type="button" key={s} onClick={() => on.answer(card.requestId, s)}>
                {s}
              </button>
            ))}
          </div>
          <label>
            <span className="sr-only">Your answer</span>
            <input value={answer} onChange={(e) => setAnswer(e.target.value)} placeholder="Your answer" />
          </label>
          <button type="submit">Answer</button>
        </form>
      )}
    </section>
  );
}

const STATUS_TEXT: Record<Extract<Item, { kind: 'tool' }>['status'], string> = {
  running: 'running',
  awaiting: 'waiting for approval',
  done: 'done',
  error: 'failed',
  cancelled: 'cancelled',
  rejected: 'rejected',
};

/** The pages a finished web tool read or found, each with its URL (links open outside the app). */
export function SourceList({ sources, depth }: { sources: readonly WebSource[]; depth: number }) {
  if (sources.length === 0) return null;
  return (
    <nav className="card sources" aria-label="Sources" style={{ marginLeft: `${depth * 1.25}rem` }}>
      <ol>
        {sources.map((s, i) => (
          <li key={`${i}:${s.url}`}>
            <a href={s.url} target="_blank" rel="noopener noreferrer nofollow">
              <span className="source-title">{s.title}</span>
              <span className="source-url">{s.url}</span>
            </a>
          </li>
        ))}
      </ol>
    </nav>
  );
}

export function ToolCard({ tool }: { tool: Extract<Item, { kind: 'tool' }> }) {
  const text = tool.status === 'running' || tool.status === 'awaiting' ? tool.output : tool.result || tool.output;
  const sources = tool.status === 'done' ? webSources(tool.name, tool.result) : [];
  return (
    <>
      <details
        className={`card tool ${tool.status}`}
        style={{ marginLeft: `${tool.depth * 1.25}rem` }}
        open={tool.status === 'running' && tool.output !== ''}
      >
        <summary>
          <span className="tool-label">{tool.label}</span> <span className="status">{STATUS_TEXT[tool.status]}</span>
          {sources.length > 0 ? (
            <span className="source-count">
              {' '}
              · {sources.length} source{sources.length === 1 ? '' : 's'}
            </span>
          ) : null}
        </summary>
        {text ? <pre className="output">{text}</pre> : null}
      </details>
      <SourceList sources={sources} depth={tool.depth} />
    </>
  );
}
