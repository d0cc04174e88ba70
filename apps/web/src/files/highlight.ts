/**
 * Syntax highlighting with highlight.js, loaded on first use (its own chunk: the chat's first
 * paint never waits for it). The answer is HTML of escaped text wrapped in `hljs-*` spans.
 */
type Hljs = typeof import('highlight.js/lib/common').default;
let loading: Promise<Hljs> | null = null;

export function loadHighlighter(): Promise<Hljs> {
  loading ??= import('highlight.js/lib/common').then((m) => m.default);
  return loading;
}

/** The language highlight.js knows for a file name, by its extension (null: guess). */
export function languageOf(hljs: Hljs, name: string): string | null {
  const ext = /\.([A-Za-z0-9_+-]{1,12})$/.exec(name)?.[1]?.toLowerCase();
  return ext && hljs.getLanguage(ext) ? ext : null;
}

export async function highlight(code: string, name: string): Promise<string> {
  const hljs = await loadHighlighter();
  const lang = languageOf(hljs, name);
  return lang ? hljs.highlight(code, { language: lang, ignoreIllegals: true }).value : hljs.highlightAuto(code).value;
}
