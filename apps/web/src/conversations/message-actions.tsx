import { useState, type ReactNode } from 'react';
import type { Outgoing } from '../api';

/** Regenerate: the last answer is replaced by a new one to the same message. */
export function RegenerateButton({ send, disabled }: { send: (f: Outgoing) => boolean; disabled: boolean }) {
  return (
    <button
      type="button"
      className="secondary small"
      disabled={disabled}
      onClick={() => send({ type: 'regenerate', client_message_id: crypto.randomUUID() })}
    >
      Regenerate
    </button>
  );
}

/**
 * A user message with "Edit": the text becomes editable; "Save and submit" replaces the message and
 * everything after it (kept in the session's details as superseded) and the agent answers anew.
 */
export function UserMessage({
  messageId,
  content,
  send,
  busy,
  children,
}: {
  messageId: string | null;
  content: string;
  send: (f: Outgoing) => boolean;
  busy: boolean;
  /** Shown in the bubble under the text (the message's attachments). */
  children?: ReactNode;
}) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(content);
  if (editing && messageId)
    return (
      <form
        className="bubble user-bubble editing"
        onSubmit={(e) => {
          e.preventDefault();
          const next = text.trim();
          if (!next) return;
          if (send({ type: 'edit', message_id: messageId, content: next, client_message_id: crypto.randomUUID() }))
            setEditing(false);
        }}
      >
        <label className="sr-only" htmlFor={`edit-${messageId}`}>
          Edited text
        </label>
        <textarea
          id={`edit-${messageId}`}
          value={text}
          rows={3}
          autoFocus
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') setEditing(false);
          }}
        />
        <div className="edit-actions">
          <button type="submit" disabled={busy}>
            Save and submit
          </button>
          <button type="button" className="secondary" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </div>
      </form>
    );
  return (
    <div className="user-line">
      <div className="bubble user-bubble">
        {content}
        {children}
      </div>
      {messageId ? (
        <button
          type="button"
          className="secondary small"
          disabled={busy}
          onClick={() => {
            setText(content);
            setEditing(true);
          }}
        >
          Edit
        </button>
      ) : null}
    </div>
  );
}
