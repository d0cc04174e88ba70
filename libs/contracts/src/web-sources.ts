/**
 * The web tools' shared facts: the domain form of a URL that approval rules match (`web:<host>`),
 * and the layout of their results, written by the tool runner and read back by the clients as a
 * list of sources. One place for both, so the writer and the readers cannot drift apart.
 */

/** Longest URL `web_fetch` accepts (characters). */
export const WEB_URL_MAX_CHARS = 2048;

/** What starts the domain form of a URL, and a path pattern that judges it. */
export const WEB_DOMAIN_PREFIX = 'web:';

/**
 * The domain form approval rules judge a `web_fetch` URL by: `web:` and the URL's host name as the
 * WHATWG URL parser reads it (lower case, IDNs in punycode, IPv6 in brackets, no port, no user
 * info). Null for what the tool runner refuses anyway (no http(s) URL, or credentials in it).
 */
export function webDomainForm(raw: unknown): string | null {
  const url = parseWebUrl(raw);
  return url ? `${WEB_DOMAIN_PREFIX}${url.hostname}` : null;
}

/** An http(s) URL without user info, or null. The one parser of the gate and the tool runner. */
export function parseWebUrl(raw: unknown): URL | null {
  if (typeof raw !== 'string' || raw.length > WEB_URL_MAX_CHARS) return null;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username !== '' || url.password !== '' || url.hostname === '') return null;
  return url;
}

/** One source a web tool's result names. */
export interface WebSource {
  title: string;
  url: string;
}

/** One search hit as the tool runner lays it out. */
export interface WebSearchHit {
  title: string;
  url: string;
  snippet: string;
}

/** Sources a result is read for at most, and the characters of it read. */
const SOURCES_MAX = 50;
const READ_MAX_CHARS = 200_000;

const oneLine = (s: string, max: number): string => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** `web_search`'s result text: a numbered list, each title followed on the next line by its URL. */
export function formatSearchResult(query: string, backend: string, hits: readonly WebSearchHit[]): string {
  const head = `Search results for "${oneLine(query, 400)}" (${backend}, ${hits.length} result${hits.length === 1 ? '' : 's'}):`;
  if (hits.length === 0) return `${head}\n\nNo results.`;
  const items = hits.map(
    (h, i) => `${i + 1}. ${oneLine(h.title, 300) || '(untitled)'}\n   URL: ${h.url}\n   ${oneLine(h.snippet, 600)}`,
  );
  return `${head}\n\n${items.join('\n\n')}`;
}

/** The header of `web_fetch`'s result: what was fetched, ended by an empty line. */
export interface WebFetchHeader {
  url: string;
  title: string;
  contentType: string;
  /** Null: the whole text; otherwise the characters shown of how many. */
  truncated: { shown: number; total: number | null } | null;
  redirectedFrom?: string;
}

export function formatFetchHeader(h: WebFetchHeader): string {
  return [
    `URL: ${h.url}`,
    ...(h.redirectedFrom ? [`Redirected from: ${h.redirectedFrom}`] : []),
    `Title: ${oneLine(h.title, 300) || '(untitled)'}`,
    `Content-Type: ${oneLine(h.contentType, 200)}`,
    h.truncated
      ? `Truncated: yes (the first ${h.truncated.shown} ${h.truncated.total === null ? 'characters of a longer text' : `of ${h.truncated.total} characters`})`
      : 'Truncated: no',
  ].join('\n');
}

const isHttp = (u: string): boolean => /^https?:\/\//i.test(u) && parseWebUrl(u) !== null;

/**
 * The sources a finished web tool's result names, for a client to list with their URLs: the
 * fetched page (from the header only: a page's own text cannot add a source), or each search hit.
 * Empty for any other tool or text.
 */
export function webSources(toolName: string, result: string): WebSource[] {
  const text = result.slice(0, READ_MAX_CHARS);
  if (toolName === 'web_fetch') {
    const header = (text.split('\n\n', 1)[0] ?? '').split('\n');
    const url = /^URL: (\S+)$/.exec(header[0] ?? '')?.[1];
    if (!url || !isHttp(url)) return [];
    const title = header.map((l) => /^Title: (.*)$/.exec(l)?.[1]).find((t) => t !== undefined) ?? url;
    return [{ title, url }];
  }
  if (toolName !== 'web_search' || !text.startsWith('Search results for ')) return [];
  const lines = text.split('\n');
  const out: WebSource[] = [];
  for (let i = 0; i + 1 < lines.length && out.length < SOURCES_MAX; i += 1) {
    const title = /^\d+\. (.*)$/.exec(lines[i] ?? '')?.[1];
    const url = title === undefined ? undefined : /^ {3}URL: (\S+)$/.exec(lines[i + 1] ?? '')?.[1];
    if (title !== undefined && url && isHttp(url)) out.push({ title, url });
  }
  return out;
}
