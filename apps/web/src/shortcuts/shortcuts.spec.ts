import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { comboMatcher, SHORTCUTS, shortcutFor, type KeyLike, type ShortcutId } from './shortcuts';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const press = (key: string, mods: Partial<KeyLike> = {}): KeyLike => ({
  key,
  ctrlKey: false,
  metaKey: false,
  shiftKey: false,
  altKey: false,
  ...mods,
});
/** The key event a combination of the table is typed as (the derivation under test, inverted). */
function typed(combo: string): KeyLike {
  const parts = combo.split('+');
  const key = parts.pop()!;
  const name = key === 'Esc' ? 'Escape' : key.length === 1 && /[a-z]/i.test(key) ? key.toLowerCase() : key;
  return press(name, { ctrlKey: parts.includes('Ctrl'), shiftKey: parts.includes('Shift') || key === '?' });
}
const where = (at: 'composer' | 'text' | 'page') => ({ inComposer: at === 'composer', inText: at !== 'page' });

describe('keyboard shortcuts: one table binds the keys and lists them', () => {
  it('every action the web client offers a key for is in the table exactly once', () => {
    const ids = SHORTCUTS.map((s) => s.id);
    const wanted: ShortcutId[] = ['send', 'stop', 'new-chat', 'search', 'approve', 'reject', 'help'];
    expect([...ids].sort()).toEqual([...wanted].sort());
  });

  it('every combination the overlay lists is bound to its own shortcut, where the table says it fires', () => {
    for (const s of SHORTCUTS)
      for (const combo of s.keys) {
        const at = s.where === 'composer' ? 'composer' : 'page';
        expect([combo, shortcutFor(typed(combo), where(at))?.id]).toEqual([combo, s.id]);
      }
  });

  it('Shift+Enter is a new line, not a send; Enter while an input method composes never sends', () => {
    expect(shortcutFor(press('Enter', { shiftKey: true }), where('composer'))).toBeNull();
    expect(shortcutFor(press('Enter', { isComposing: true }), where('composer'))).toBeNull();
    expect(shortcutFor(press('Enter'), where('page'))).toBeNull();
    expect(shortcutFor(press('Enter', { metaKey: true }), where('composer'))?.id).toBe('send');
  });

  it('property: while typing in a text field only the documented non-text keys fire; a plain character never does', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ minLength: 1, maxLength: 1 }), fc.constantFrom('Enter', 'Escape', 'Tab', 'Backspace')),
        fc.record({ ctrlKey: fc.boolean(), metaKey: fc.boolean(), shiftKey: fc.boolean(), altKey: fc.boolean() }),
        fc.constantFrom<'composer' | 'text'>('composer', 'text'),
        (key, mods, at) => {
          const s = shortcutFor({ key, ...mods }, where(at));
          if (!s) return;
          expect(s.where === 'anywhere' || (s.where === 'composer' && at === 'composer')).toBe(true);
          if (key.length === 1 && !mods.ctrlKey && !mods.metaKey)
            throw new Error(`"${key}" fired ${s.id} in a text field`);
        },
      ),
      { seed: SEED, numRuns: 5000 },
    );
  });

  it('modifiers are exact: Ctrl+A is not approve, Alt never matches, ⌘ counts as Ctrl', () => {
    expect(comboMatcher('A')(press('a', { ctrlKey: true }))).toBe(false);
    expect(comboMatcher('Ctrl+K')(press('k', { altKey: true, ctrlKey: true }))).toBe(false);
    expect(comboMatcher('Ctrl+K')(press('k', { metaKey: true }))).toBe(true);
    expect(comboMatcher('?')(press('?', { shiftKey: true }))).toBe(true);
  });
});
