import type { ToolRunnerConfig } from '../config';
import { ToolCancelled, type ToolContext } from '../exec/tool-context';
import { ToolError } from '../tool-error';
import { NO_SEARCH_BACKEND, WebToolsService } from './web-tools.service';

/**
 * WebToolsService with the search backend's HTTP faked (`fetch` stubbed; nothing leaves the
 * process): web_search is offered only with a backend, names its hits, and a failing, slow or
 * cancelled backend ends the call with a sentence that never carries the request (its key); a
 * fetch of a literal private address is refused before any connection.
 */
const KEY = 'sk-search-key-never-shown';
const base = {
  SKALD_WEB_ALLOW_HOSTS: [],
  SKALD_WEB_FETCH_MAX_BYTES: 1_000_000,
  SKALD_WEB_FETCH_TIMEOUT_MS: 200,
  SKALD_WEB_FETCH_MAX_REDIRECTS: 5,
  SKALD_WEB_FETCH_CHARS: 20_000,
  SKALD_WEB_PDF_MAX_PAGES: 10,
  SKALD_WEB_SEARCH_BACKEND: 'none',
};
const config = (over: Record<string, unknown> = {}) => ({ ...base, ...over }) as unknown as ToolRunnerConfig;
const searxng = config({ SKALD_WEB_SEARCH_BACKEND: 'searxng', SKALD_WEB_SEARCH_URL: 'http://search.internal/' });
const brave = config({ SKALD_WEB_SEARCH_BACKEND: 'brave', SKALD_WEB_SEARCH_API_KEY: KEY });

const ctx = (signal: AbortSignal = new AbortController().signal): ToolContext => ({
  userId: 'u1',
  role: 'user',
  sessionId: 's1',
  toolCallId: 'c1',
  workdir: '/workspace',
  signal,
});

let fetchMock: jest.SpyInstance;
afterEach(() => fetchMock?.mockRestore());
const answer = (body: unknown, status = 200) =>
  (fetchMock = jest
    .spyOn(globalThis, 'fetch')
    .mockImplementation(async () => new Response(JSON.stringify(body), { status })));

describe('WebToolsService', () => {
  it('offers no web_search without a backend, and says why when it is called anyway', async () => {
    const svc = new WebToolsService(config());
    expect(svc.searchOffered).toBe(false);
    await expect(svc.search(ctx(), { query: 'q', count: 3 })).rejects.toThrow(NO_SEARCH_BACKEND);
    expect(new WebToolsService(searxng).searchOffered).toBe(true);
  });

  it('answers the hits of the configured backend, with their URLs', async () => {
    answer({
      results: [
        { url: 'https://nodejs.org/en/blog', title: 'Node.js blog', content: 'Release notes' },
        { url: 'javascript:alert(1)', title: 'planted', content: 'x' },
      ],
    });
    const out = await new WebToolsService(searxng).search(ctx(), { query: 'node 20 release', count: 5 });
    expect(out.result).toContain('https://nodejs.org/en/blog');
    expect(out.result).toContain('Node.js blog');
    expect(out.result).not.toContain('javascript:');
    const asked = (fetchMock.mock.calls as unknown[][])[0][0] as URL;
    expect(String(asked)).toBe('http://search.internal/search?q=node+20+release&format=json');
  });

  it('a failing backend ends the call with its name, never the key', async () => {
    answer({ error: `bad key ${KEY}` }, 500);
    const e = await new WebToolsService(brave).search(ctx(), { query: 'q', count: 3 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ToolError);
    expect((e as Error).message).toMatch(/^web_search: .*brave/);
    expect((e as Error).message).not.toContain(KEY);
  });

  it('a backend slower than the bound times out; a cancelled call is cancelled', async () => {
    fetchMock = jest
      .spyOn(globalThis, 'fetch')
      .mockImplementation(
        (_url, init) =>
          new Promise((_resolve, reject) =>
            (init?.signal as AbortSignal).addEventListener('abort', () => reject(new Error('aborted'))),
          ),
      );
    await expect(new WebToolsService(searxng).search(ctx(), { query: 'q', count: 3 })).rejects.toThrow(
      'web_search: the searxng backend took longer than 0.2 s',
    );
    const stop = new AbortController();
    const pending = new WebToolsService(searxng).search(ctx(stop.signal), { query: 'q', count: 3 });
    stop.abort();
    await expect(pending).rejects.toBeInstanceOf(ToolCancelled);
  });

  it('refuses a fetch of a literal private or metadata address before connecting', async () => {
    fetchMock = jest.spyOn(globalThis, 'fetch');
    for (const url of ['http://127.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]:8080/']) {
      const e = await new WebToolsService(config()).fetch(ctx(), { url }).catch((x: unknown) => x);
      expect([url, e instanceof ToolError && /refused/.test(e.message)]).toEqual([url, true]);
    }
    expect(fetchMock).not.toHaveBeenCalled();
  });
});
