import { useEffect, useState } from 'react';
import './theme.css';

export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'skald.theme';
const NEXT: Record<ThemeChoice, ThemeChoice> = { system: 'dark', dark: 'light', light: 'system' };

function saved(): ThemeChoice {
  const v = localStorage.getItem(KEY);
  return v === 'light' || v === 'dark' ? v : 'system';
}

/** Applies a choice: `system` follows `prefers-color-scheme`; the others pin the colours. */
export function applyTheme(choice: ThemeChoice): void {
  if (choice === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
}

applyTheme(saved());

/** The header's toggle: system → dark → light → system, remembered in this browser. */
export function ThemeToggle() {
  const [choice, setChoice] = useState<ThemeChoice>(saved);
  useEffect(() => {
    applyTheme(choice);
    if (choice === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  }, [choice]);
  return (
    <button
      type="button"
      className="theme-toggle"
      aria-label={`Colour theme: ${choice}. Switch to ${NEXT[choice]}`}
      title={`Theme: ${choice}`}
      onClick={() => setChoice(NEXT[choice])}
    >
      <span aria-hidden="true">{choice === 'dark' ? '☾' : choice === 'light' ? '☀' : '◐'}</span>
    </button>
  );
}
