import { useState } from 'react';
import { Diff } from './diff-view';
import './edit-call.css';

/**
 * Edit before approve: the call's text arguments (the command, the path, the content, …) in an
 * editor, the preview recomputed from the edit as it is typed (the command as it will run; for a
 * file write the diff against the file the card showed, while the path is the same), and one
 * button that approves the edited call. The approval service checks the edit with the tool's
 * schema and the same rules as the model's call: a refusal is shown here and the call still waits.
 */

/** The arguments offered for editing: every text argument, the command, path and content first. */
export function editableKeys(args: Record<string, unknown>): string[] {
  const first = ['command', 'path', 'content'];
  const keys = Object.keys(args).filter((k) => typeof args[k] === 'string');
  return [...first.filter((k) => keys.includes(k)), ...keys.filter((k) => !first.includes(k)).sort()];
}

/** Whether a call can be edited here: a command or a file tool's call (an MCP call cannot). */
export function canEdit(toolName: string, args: unknown): args is Record<string, unknown> {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return false;
  if (toolName.startsWith('mcp__')) return false;
  const a = args as Record<string, unknown>;
  return typeof a['command'] === 'string' || typeof a['path'] === 'string';
}

const MULTILINE = new Set(['command', 'content', 'old_string', 'new_string', 'text']);

export interface EditCallProps {
  /** Names the editor's fields for assistive technology (several cards may be open). */
  id: string;
  toolName: string;
  args: Record<string, unknown>;
  /** The file the card's diff was computed from, when it has one: the edited content is diffed against it. */
  preview?: { path: string; oldContent?: string };
  busy: boolean;
  error: string;
  onApprove: (edited: Record<string, unknown>) => void;
  onCancel: () => void;
}

export function EditCall({ id, toolName, args, preview, busy, error, onApprove, onCancel }: EditCallProps) {
  const keys = editableKeys(args);
  const [values, setValues] = useState<Record<string, string>>(
    Object.fromEntries(keys.map((k) => [k, String(args[k])])),
  );
  const edited = { ...args, ...values };
  const changed = keys.filter((k) => values[k] !== args[k]);
  // The card's diff was computed from the file the original path names: the same file while the path is unchanged.
  const samePath = values['path'] === args['path'];
  return (
    <form
      className="edit-call"
      aria-label="edit the call"
      onSubmit={(e) => {
        e.preventDefault();
        if (changed.length > 0) onApprove(edited);
      }}
    >
      {keys.map((k) => (
        <label key={k} className="edit-field">
          <span>{k}</span>
          {MULTILINE.has(k) || values[k]?.includes('\n') ? (
            <textarea
              id={`edit-${id}-${k}`}
              value={values[k]}
              rows={Math.min(12, Math.max(2, (values[k] ?? '').split('\n').length + 1))}
              spellCheck={false}
              onChange={(e) => setValues({ ...values, [k]: e.target.value })}
            />
          ) : (
            <input
              id={`edit-${id}-${k}`}
              value={values[k]}
              spellCheck={false}
              onChange={(e) => setValues({ ...values, [k]: e.target.value })}
            />
          )}
        </label>
      ))}
      <h4>What will run</h4>
      {toolName === 'execute_cmd' ? (
        <pre className="command" aria-label="edited command">
          $ {values['command']}
        </pre>
      ) : preview !== undefined && typeof values['content'] === 'string' && toolName === 'write_file' ? (
        <>
          {samePath ? null : (
            <p className="edit-note">Another path than {preview.path}: its current content is not shown.</p>
          )}
          <Diff oldText={samePath ? (preview.oldContent ?? '') : ''} newText={values['content']} />
        </>
      ) : changed.length === 0 ? (
        <p className="edit-note">Nothing changed yet.</p>
      ) : (
        changed.map((k) => (
          <div key={k}>
            <p className="edit-note">{k}</p>
            <Diff oldText={String(args[k])} newText={values[k] ?? ''} />
          </div>
        ))
      )}
      {error ? (
        <p role="alert" className="edit-error">
          {error}
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" disabled={busy || changed.length === 0}>
          Approve edited call
        </button>
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel edit
        </button>
      </div>
    </form>
  );
}
