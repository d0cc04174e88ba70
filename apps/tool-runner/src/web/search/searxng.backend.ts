import { z } from 'zod';
import { cleanHits, readJson, type SearchBackend, type SearchEndpoint, SearchBackendError } from './search-backend';

const Answer = z.object({
  results: z
    .array(z.object({ url: z.unknown(), title: z.unknown(), content: z.unknown() }).loose())
    .max(1000)
    .default([]),
});

/** SearXNG's JSON API (`GET <base>/search?q=…&format=json`; the instance must enable the json format). */
export class SearxngBackend implements SearchBackend {
  readonly name = 'searxng' as const;
  constructor(private readonly endpoint: SearchEndpoint) {}

  async search(query: string, count: number, signal: AbortSignal) {
    const url = new URL('search', this.endpoint.url.endsWith('/') ? this.endpoint.url : `${this.endpoint.url}/`);
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    const res = await this.endpoint.fetch(url, { signal, headers: { accept: 'application/json' } });
    const parsed = Answer.safeParse(await readJson(res, this.name, this.endpoint.maxBytes));
    if (!parsed.success) throw new SearchBackendError('the searxng search backend sent an answer of another shape');
    return cleanHits(
      parsed.data.results.map((r) => ({ title: r.title, url: r.url, snippet: r.content })),
      count,
    );
  }
}
