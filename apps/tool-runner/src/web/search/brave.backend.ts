import { z } from 'zod';
import { cleanHits, readJson, type SearchBackend, type SearchEndpoint, SearchBackendError } from './search-backend';

/** Brave Search API's public endpoint (`SKALD_WEB_SEARCH_URL` overrides it). */
export const BRAVE_URL = 'https://api.search.brave.com/res/v1/web/search';

const Answer = z.object({
  web: z
    .object({
      results: z
        .array(z.object({ url: z.unknown(), title: z.unknown(), description: z.unknown() }).loose())
        .max(1000)
        .default([]),
    })
    .loose()
    .optional(),
});

/** The Brave Search API (`GET …/web/search?q=…&count=…`, key in `X-Subscription-Token`). */
export class BraveBackend implements SearchBackend {
  readonly name = 'brave' as const;
  constructor(private readonly endpoint: SearchEndpoint) {}

  async search(query: string, count: number, signal: AbortSignal) {
    const url = new URL(this.endpoint.url);
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(count));
    const res = await this.endpoint.fetch(url, {
      signal,
      headers: { accept: 'application/json', 'x-subscription-token': this.endpoint.apiKey ?? '' },
    });
    const parsed = Answer.safeParse(await readJson(res, this.name, this.endpoint.maxBytes));
    if (!parsed.success) throw new SearchBackendError('the brave search backend sent an answer of another shape');
    return cleanHits(
      (parsed.data.web?.results ?? []).map((r) => ({ title: r.title, url: r.url, snippet: r.description })),
      count,
    );
  }
}
