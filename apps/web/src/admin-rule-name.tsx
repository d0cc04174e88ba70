import { useEffect, useRef, useState } from 'react';
import type { ApprovalRuleDto } from '@skald/contracts';
import type { Api } from './api';

/**
 * A stored rule's name with an inline rename: "Rename" turns the name into a labelled field with
 * Save and Cancel (Escape cancels); Save sends `PATCH /api/approval/rules/{id} {name}`. Focus moves
 * to the field when it opens and back to the button when it closes.
 */
export function RuleName({
  api,
  rule,
  onDone,
  fail,
}: {
  api: Api;
  rule: ApprovalRuleDto;
  onDone: () => void;
  fail: (e: unknown) => void;
}) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(rule.name);
  const opener = useRef<HTMLButtonElement>(null);
  const [refocus, setRefocus] = useState(false);
  useEffect(() => {
    if (editing || !refocus) return;
    opener.current?.focus();
    setRefocus(false);
  }, [editing, refocus]);
  const close = () => {
    setEditing(false);
    setRefocus(true);
  };
  if (!editing)
    return (
      <span className="rule-name-view">
        <span>{rule.name}</span>{' '}
        <button
          type="button"
          ref={opener}
          aria-label={`rename rule “${rule.name}”`}
          onClick={() => {
            setName(rule.name);
            setEditing(true);
          }}
        >
          Rename
        </button>
      </span>
    );
  return (
    <form
      className="rule-rename"
      aria-label={`rename rule “${rule.name}”`}
      onSubmit={(e) => {
        e.preventDefault();
        const next = name.trim();
        if (next === '' || next === rule.name) return close();
        api.patch(`/api/approval/rules/${rule.id}`, { name: next }).then(() => {
          close();
          onDone();
        }, fail);
      }}
      onKeyDown={(e) => {
        if (e.key === 'Escape') close();
      }}
    >
      <label>
        <span className="sr-only">New name of rule “{rule.name}”</span>
        <input value={name} onChange={(e) => setName(e.target.value)} required autoFocus />
      </label>
      <button type="submit">Save</button>
      <button type="button" onClick={close}>
        Cancel
      </button>
    </form>
  );
}
