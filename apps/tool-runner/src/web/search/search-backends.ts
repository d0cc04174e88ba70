import { BRAVE_URL, BraveBackend } from './brave.backend';
import type { SearchBackend, SearchBackendName, SearchEndpoint } from './search-backend';
import { SearxngBackend } from './searxng.backend';
import { TAVILY_URL, TavilyBackend } from './tavily.backend';

/** The configured backend, or null for `none` (then `web_search` is not offered). */
export function searchBackend(
  name: SearchBackendName,
  endpoint: Omit<SearchEndpoint, 'url'> & { url?: string },
): SearchBackend | null {
  switch (name) {
    case 'none':
      return null;
    case 'searxng':
      if (!endpoint.url) throw new Error('SKALD_WEB_SEARCH_URL is required for the searxng backend');
      return new SearxngBackend({ ...endpoint, url: endpoint.url });
    case 'brave':
      return new BraveBackend({ ...endpoint, url: endpoint.url ?? BRAVE_URL });
    case 'tavily':
      return new TavilyBackend({ ...endpoint, url: endpoint.url ?? TAVILY_URL });
    default: {
      const never: never = name;
      throw new Error(`unknown search backend ${String(never)}`);
    }
  }
}
