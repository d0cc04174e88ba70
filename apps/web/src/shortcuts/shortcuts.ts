/**
 * The keyboard shortcuts: one table binds the keys (`shortcutFor`) and lists them in the `?`
 * overlay, so the list cannot drift from what the keys do. Each acts on an element marked with
 * `data-shortcut="<id>"` (the composer, the Stop button, the sidebar's New chat and search, the
 * focused approval card's buttons), so a screen without that element simply ignores the key.
 */
export type ShortcutId = 'send' | 'stop' | 'new-chat' | 'search' | 'approve' | 'reject' | 'help';

export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
  /** An input method is composing: Enter confirms the composition, it never sends. */
  isComposing?: boolean;
}

export interface Shortcut {
  id: ShortcutId;
  /** The key combinations, as the overlay shows them and as they are matched (`Ctrl` is Ctrl or ⌘). */
  keys: string[];
  description: string;
  /**
   * Where it fires: `composer` only in the message box; `anywhere` also while typing in a text
   * field (a key that is never text there); `outside-text` never while typing in a text field.
   */
  where: 'composer' | 'anywhere' | 'outside-text';
  /** How it acts on its marked element. */
  act: 'submit' | 'click' | 'focus' | 'dialog';
}

export const SHORTCUTS: readonly Shortcut[] = [
  {
    id: 'send',
    keys: ['Enter', 'Ctrl+Enter'],
    description: 'Send the message (Shift+Enter starts a new line)',
    where: 'composer',
    act: 'submit',
  },
  { id: 'stop', keys: ['Esc'], description: 'Stop the running turn', where: 'anywhere', act: 'click' },
  { id: 'new-chat', keys: ['Ctrl+Shift+O'], description: 'New chat', where: 'anywhere', act: 'click' },
  { id: 'search', keys: ['Ctrl+K'], description: 'Search conversations', where: 'anywhere', act: 'focus' },
  {
    id: 'approve',
    keys: ['A'],
    description: 'Approve the focused approval card',
    where: 'outside-text',
    act: 'click',
  },
  { id: 'reject', keys: ['R'], description: 'Reject the focused approval card', where: 'outside-text', act: 'click' },
  { id: 'help', keys: ['?'], description: 'Show these shortcuts (Esc closes)', where: 'outside-text', act: 'dialog' },
];

/**
 * The matcher of one combination as written in the table: modifiers must be exactly those named
 * (`Ctrl` is Ctrl or ⌘; Alt never); a symbol such as `?` is matched by the character typed (Shift
 * is how it is typed); `Esc` is the Escape key. Never while an input method composes.
 */
export function comboMatcher(combo: string): (e: KeyLike) => boolean {
  const parts = combo.split('+');
  const last = parts.pop() ?? '';
  const key = last === 'Esc' ? 'Escape' : last;
  const ctrl = parts.includes('Ctrl');
  const shift = parts.includes('Shift');
  const symbol = key.length === 1 && !/[a-z0-9]/i.test(key);
  return (e) => {
    if (e.isComposing || e.altKey || (e.ctrlKey || e.metaKey) !== ctrl) return false;
    if (symbol) return e.key === key;
    return e.shiftKey === shift && e.key.toLowerCase() === key.toLowerCase();
  };
}

const MATCHERS = new Map(SHORTCUTS.map((s) => [s.id, s.keys.map(comboMatcher)]));

/** An element where a key means text: a text input, a textarea, a select, anything editable. */
export function isTextField(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if ((el as HTMLElement).isContentEditable) return true;
  if (tag !== 'input') return false;
  const type = ((el as HTMLInputElement).type || 'text').toLowerCase();
  return !['button', 'checkbox', 'radio', 'submit', 'reset', 'range', 'color', 'file', 'image'].includes(type);
}

/**
 * The shortcut a key press means where it happened (`inComposer`: the message box has the focus;
 * `inText`: any other text field has it), or null: then the key is left to the page.
 */
export function shortcutFor(e: KeyLike, at: { inComposer: boolean; inText: boolean }): Shortcut | null {
  for (const s of SHORTCUTS) {
    if (!(MATCHERS.get(s.id) ?? []).some((m) => m(e))) continue;
    if (s.where === 'composer' && !at.inComposer) continue;
    if (s.where === 'outside-text' && (at.inText || at.inComposer)) continue;
    return s;
  }
  return null;
}
