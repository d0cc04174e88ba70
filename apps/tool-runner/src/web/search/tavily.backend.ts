import { z } from 'zod';
import { cleanHits, readJson, type SearchBackend, type SearchEndpoint, SearchBackendError } from './search-backend';

/** Tavily's public endpoint (`SKALD_WEB_SEARCH_URL` overrides it). */
export const TAVILY_URL = 'https://api.tavily.com/search';

const Answer = z.object({
  results: z
    .array(z.object({ url: z.unknown(), title: z.unknown(), content: z.unknown() }).loose())
    .max(1000)
    .default([]),
});

/** Tavily's search API (`POST /search` with a JSON body, key as a bearer token). */
export class TavilyBackend implements SearchBackend {
  readonly name = 'tavily' as const;
  constructor(private readonly endpoint: SearchEndpoint) {}

  async search(query: string, count: number, signal: AbortSignal) {
    const res = await this.endpoint.fetch(this.endpoint.url, {
      method: 'POST',
      signal,
      headers: {
        accept: 'application/json',
        'content-type': 'application/json',
        authorization: `Bearer ${this.endpoint.apiKey ?? ''}`,
      },
      body: JSON.stringify({ query, max_results: count, search_depth: 'basic' }),
    });
    const parsed = Answer.safeParse(await readJson(res, this.name, this.endpoint.maxBytes));
    if (!parsed.success) throw new SearchBackendError('the tavily search backend sent an answer of another shape');
    return cleanHits(
      parsed.data.results.map((r) => ({ title: r.title, url: r.url, snippet: r.content })),
      count,
    );
  }
}
