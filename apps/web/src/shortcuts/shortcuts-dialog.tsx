import { useEffect, useRef, useState } from 'react';
import { isTextField, SHORTCUTS, shortcutFor, type Shortcut } from './shortcuts';

/** The element a shortcut acts on, if the screen has it now. */
function targetOf(s: Shortcut): HTMLElement | null {
  if (s.id === 'approve' || s.id === 'reject') {
    const card = document.activeElement?.closest('.card.approval');
    return card?.querySelector<HTMLElement>(`[data-shortcut="${s.id}"]`) ?? null;
  }
  return document.querySelector<HTMLElement>(`[data-shortcut="${s.id}"]`);
}

/**
 * The page-wide shortcuts (the composer's own — send — are bound on it) and the `?` overlay that
 * lists every shortcut from the same table. While a dialog is open the keys are the dialog's.
 */
export function Shortcuts() {
  const dialog = useRef<HTMLDialogElement | null>(null);
  const [open, setOpen] = useState(false);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || document.querySelector('dialog[open]')) return;
      const active = document.activeElement;
      const s = shortcutFor(e, {
        inComposer: active?.getAttribute('data-shortcut') === 'send',
        inText: isTextField(active),
      });
      if (!s || s.where === 'composer') return;
      if (s.act === 'dialog') {
        e.preventDefault();
        setOpen(true);
        return;
      }
      const target = targetOf(s);
      if (!target || (target as HTMLButtonElement).disabled) return;
      e.preventDefault();
      if (s.act === 'focus') target.focus();
      else target.click();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) d.showModal?.();
    if (!open && d.open) d.close();
  }, [open]);

  return (
    <>
      <button type="button" className="secondary small" aria-haspopup="dialog" onClick={() => setOpen(true)}>
        <span aria-hidden="true">?</span>
        <span className="sr-only">Keyboard shortcuts</span>
      </button>
      <dialog
        ref={dialog}
        className="shortcuts-dialog"
        aria-labelledby="shortcuts-title"
        onClose={() => setOpen(false)}
        onCancel={() => setOpen(false)}
      >
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Keys</th>
              <th scope="col">Does</th>
            </tr>
          </thead>
          <tbody>
            {SHORTCUTS.map((s) => (
              <tr key={s.id}>
                <td>
                  {s.keys.map((k, i) => (
                    <span key={k}>
                      {i > 0 ? ' or ' : null}
                      <kbd>{k}</kbd>
                    </span>
                  ))}
                </td>
                <td>{s.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p className="muted">
          Shortcuts other than Esc, Ctrl+K and Ctrl+Shift+O do not fire while you type in a text field.
        </p>
        <form method="dialog">
          <button type="submit">Close</button>
        </form>
      </dialog>
    </>
  );
}
