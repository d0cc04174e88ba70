import type { WebSearchHit } from '@skald/contracts';

/** The search backends `SKALD_WEB_SEARCH_BACKEND` names; `none` offers no `web_search`. */
export const SEARCH_BACKENDS = ['none', 'searxng', 'brave', 'tavily'] as const;
export type SearchBackendName = (typeof SEARCH_BACKENDS)[number];

/** One web search API: a query in, hits out. One implementation per API. */
export interface SearchBackend {
  readonly name: Exclude<SearchBackendName, 'none'>;
  search(query: string, count: number, signal: AbortSignal): Promise<WebSearchHit[]>;
}

/** How a backend reaches its API: the operator's endpoint and key, bounded in bytes and time. */
export interface SearchEndpoint {
  url: string;
  apiKey?: string;
  maxBytes: number;
  fetch: typeof fetch;
}

export class SearchBackendError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SearchBackendError';
  }
}

/** A backend's JSON answer, read up to `maxBytes`; a failed or oversized answer throws saying which. */
export async function readJson(res: Response, backend: string, maxBytes: number): Promise<unknown> {
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new SearchBackendError(`the ${backend} search backend answered ${res.status}`);
  }
  const reader = res.body?.getReader();
  if (!reader) throw new SearchBackendError(`the ${backend} search backend sent no body`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = (await reader.read()) as { done: boolean; value?: Uint8Array };
    if (done || !value) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new SearchBackendError(`the ${backend} search backend sent more than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new SearchBackendError(`the ${backend} search backend sent no JSON`);
  }
}

/** Hits whose URL is http(s), strings only, at most `count`. */
export function cleanHits(
  raw: ReadonlyArray<{ title?: unknown; url?: unknown; snippet?: unknown }>,
  count: number,
): WebSearchHit[] {
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  return raw
    .filter((h) => typeof h.url === 'string' && /^https?:\/\//i.test(h.url))
    .slice(0, count)
    .map((h) => ({ title: str(h.title), url: str(h.url), snippet: str(h.snippet) }));
}
