/** How a conversation's title is asked for and cleaned up: pure, so every rule is a unit test. */

/** Characters of the first question and answer the title is written from. */
export const TITLE_SOURCE_CHARS = 2_000;
/** Longest title kept. */
export const TITLE_MAX_CHARS = 80;

export const TITLE_INSTRUCTION =
  'Write a short title (at most 6 words) for the conversation below, in the language of the user. ' +
  'Answer with the title only: no quotes, no punctuation at the end.';

/** The messages of the title request: an instruction and the first exchange, cut to a bound. */
export function titleRequest(question: string, answer: string): Array<{ role: 'system' | 'user'; content: string }> {
  const cut = (t: string): string => (t.length > TITLE_SOURCE_CHARS ? `${t.slice(0, TITLE_SOURCE_CHARS)}…` : t);
  return [
    { role: 'system', content: TITLE_INSTRUCTION },
    { role: 'user', content: `<user>\n${cut(question)}\n</user>\n<assistant>\n${cut(answer)}\n</assistant>` },
  ];
}

/**
 * A model's answer as a title: the first non-empty line without surrounding quotes, markdown
 * marks, a "Title:" prefix and trailing punctuation, whitespace folded, cut at a word boundary.
 * Null when nothing usable is left.
 */
export function cleanTitle(raw: string): string | null {
  const line =
    raw
      .replace(/<think>[\s\S]*?<\/think>/gi, '')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? '';
  let t = line
    // control characters and line separators
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' ')
    .replace(/^#+\s*/, '')
    .replace(/^title\s*:\s*/i, '')
    .replace(/^["'“”‘’`*_]+|["'“”‘’`*_]+$/g, '')
    .replace(/[.!?:;,\s]+$/u, '')
    .replace(/\s+/g, ' ')
    .trim();
  if ([...t].length > TITLE_MAX_CHARS) {
    const chars = [...t].slice(0, TITLE_MAX_CHARS).join('');
    const space = chars.lastIndexOf(' ');
    t = `${(space > TITLE_MAX_CHARS / 2 ? chars.slice(0, space) : chars).trimEnd()}…`;
  }
  return t.length > 0 ? t : null;
}

/** The title when no model can write one: the start of the first question. */
export function fallbackTitle(question: string): string {
  return cleanTitle(question.replace(/\s+/g, ' ')) ?? 'Conversation';
}
