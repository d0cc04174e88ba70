import type { IncomingMessage } from 'node:http';
import { webSources } from '@skald/contracts';
import { ToolRunnerConfigSchema } from '../config';
import type { ToolContext } from '../exec/tool-context';
import { ToolError } from '../tool-error';
import { NO_SEARCH_BACKEND, WebToolsService } from './web-tools.service';
import { startTestWebServer, type TestWebServer } from './web-test-server';

/**
 * web_search against a fake of each implemented API served by this test: SearXNG's JSON API,
 * Brave's web search and Tavily's search, each checking the request as the real API would (query,
 * count, key), and a backend that fails, lies or floods.
 */
const KEY = 'sk-test-search-key-0123456789';
const HITS = [
  { title: 'Release 5.0\nnotes', url: 'https://example.com/v5', text: 'What changed in version 5.' },
  { title: 'Migration guide', url: 'https://example.com/migrate', text: 'Moving from 4 to 5.' },
  { title: 'Not a web page', url: 'javascript:alert(1)', text: 'dropped' },
];
let server: TestWebServer;
const seen: Array<{ path: string; query: URLSearchParams; headers: IncomingMessage['headers']; body: string }> = [];

function record(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      seen.push({ path: url.pathname, query: url.searchParams, headers: req.headers, body });
      resolve();
    });
  });
}

beforeAll(async () => {
  server = await startTestWebServer({
    '/searx/search': (q, s) =>
      void record(q).then(() =>
        s
          .writeHead(200, { 'content-type': 'application/json' })
          .end(
            JSON.stringify({ query: 'x', results: HITS.map((h) => ({ title: h.title, url: h.url, content: h.text })) }),
          ),
      ),
    '/brave/res/v1/web/search': (q, s) =>
      void record(q).then(() =>
        q.headers['x-subscription-token'] !== KEY
          ? s.writeHead(401).end('{"error":"bad token"}')
          : s.writeHead(200, { 'content-type': 'application/json' }).end(
              JSON.stringify({
                web: { results: HITS.map((h) => ({ title: h.title, url: h.url, description: h.text })) },
              }),
            ),
      ),
    '/tavily/search': (q, s) =>
      void record(q).then(() =>
        q.method !== 'POST' || q.headers.authorization !== `Bearer ${KEY}`
          ? s.writeHead(401).end()
          : s
              .writeHead(200, { 'content-type': 'application/json' })
              .end(JSON.stringify({ results: HITS.map((h) => ({ title: h.title, url: h.url, content: h.text })) })),
      ),
    '/broken/search': (_q, s) => s.writeHead(500).end('oops'),
    '/lying/search': (_q, s) => s.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json'),
    '/flood/search': (_q, s) => {
      s.writeHead(200, { 'content-type': 'application/json' });
      s.write('{"results":[');
      const item = JSON.stringify({ title: 'x'.repeat(1000), url: 'https://e.com', content: 'y' }) + ',';
      for (let i = 0; i < 5000; i += 1) s.write(item);
      s.end('{}]}');
    },
    '/slow/search': (_q, s) => {
      s.writeHead(200, { 'content-type': 'application/json' });
      const t = setInterval(() => s.write(' '), 100);
      s.on('close', () => clearInterval(t));
    },
    '/redirect/search': (_q, s) => s.writeHead(302, { location: 'http://169.254.169.254/' }).end(),
  });
});
afterAll(() => server.close());

const service = (env: Record<string, string>): WebToolsService =>
  new WebToolsService(ToolRunnerConfigSchema.parse({ ...env }));
const ctx = (): ToolContext => ({
  userId: 'u',
  role: 'user',
  sessionId: 's',
  toolCallId: 't',
  workdir: '/workspace',
  signal: new AbortController().signal,
});
async function failure(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

const expectResult = (result: string, backend: string) => {
  expect(result).toBe(
    `Search results for "what changed in version 5" (${backend}, 2 results):\n\n` +
      '1. Release 5.0 notes\n   URL: https://example.com/v5\n   What changed in version 5.\n\n' +
      '2. Migration guide\n   URL: https://example.com/migrate\n   Moving from 4 to 5.',
  );
  expect(webSources('web_search', result)).toEqual([
    { title: 'Release 5.0 notes', url: 'https://example.com/v5' },
    { title: 'Migration guide', url: 'https://example.com/migrate' },
  ]);
};

describe('web_search backends', () => {
  it('SearXNG: GET <base>/search?q=…&format=json', async () => {
    const web = service({ SKALD_WEB_SEARCH_BACKEND: 'searxng', SKALD_WEB_SEARCH_URL: server.url('/searx') });
    expect(web.searchOffered).toBe(true);
    const out = await web.search(ctx(), { query: 'what changed in version 5', count: 5 });
    expectResult(out.result, 'searxng');
    const req = seen.at(-1)!;
    expect(req.path).toBe('/searx/search');
    expect(req.query.get('q')).toBe('what changed in version 5');
    expect(req.query.get('format')).toBe('json');
  });

  it('Brave: the key in X-Subscription-Token, count in the query', async () => {
    const web = service({
      SKALD_WEB_SEARCH_BACKEND: 'brave',
      SKALD_WEB_SEARCH_URL: server.url('/brave/res/v1/web/search'),
      SKALD_WEB_SEARCH_API_KEY: KEY,
    });
    const out = await web.search(ctx(), { query: 'what changed in version 5', count: 3 });
    expectResult(out.result, 'brave');
    expect(seen.at(-1)!.query.get('count')).toBe('3');
    const wrongKey = service({
      SKALD_WEB_SEARCH_BACKEND: 'brave',
      SKALD_WEB_SEARCH_URL: server.url('/brave/res/v1/web/search'),
      SKALD_WEB_SEARCH_API_KEY: 'wrong',
    });
    const e = await failure(wrongKey.search(ctx(), { query: 'x', count: 3 }));
    expect(e.message).toBe('web_search: the brave search backend answered 401');
  });

  it('Tavily: POST with a JSON body and a bearer key', async () => {
    const web = service({
      SKALD_WEB_SEARCH_BACKEND: 'tavily',
      SKALD_WEB_SEARCH_URL: server.url('/tavily/search'),
      SKALD_WEB_SEARCH_API_KEY: KEY,
    });
    const out = await web.search(ctx(), { query: 'what changed in version 5', count: 4 });
    expectResult(out.result, 'tavily');
    expect(JSON.parse(seen.at(-1)!.body)).toMatchObject({ query: 'what changed in version 5', max_results: 4 });
  });

  it('keeps at most `count` hits', async () => {
    const web = service({ SKALD_WEB_SEARCH_BACKEND: 'searxng', SKALD_WEB_SEARCH_URL: server.url('/searx') });
    const out = await web.search(ctx(), { query: 'q', count: 1 });
    expect(webSources('web_search', out.result)).toHaveLength(1);
  });

  it('a failing, lying, flooding, slow or redirecting backend is an error that names it, never its key', async () => {
    const cases: Array<[string, RegExp]> = [
      ['/broken', /^web_search: the searxng search backend answered 500$/],
      ['/lying', /^web_search: the searxng search backend sent no JSON$/],
      ['/flood', /^web_search: the searxng search backend sent more than 2097152 bytes$/],
      ['/slow', /^web_search: the searxng backend took longer than 1 s$/],
      ['/redirect', /^web_search: the searxng search backend could not be reached$/],
    ];
    for (const [base, message] of cases) {
      const web = service({
        SKALD_WEB_SEARCH_BACKEND: 'searxng',
        SKALD_WEB_SEARCH_URL: server.url(base),
        SKALD_WEB_SEARCH_API_KEY: KEY,
        SKALD_WEB_FETCH_TIMEOUT_MS: '1000',
      });
      const e = await failure(web.search(ctx(), { query: 'q', count: 5 }));
      expect(e.message).toMatch(message);
      expect(e.message).not.toContain(KEY);
    }
  });

  it('without a backend, web_search is not offered and says why when called', async () => {
    const web = service({});
    expect(web.searchOffered).toBe(false);
    expect((await failure(web.search(ctx(), { query: 'q', count: 5 }))).message).toBe(NO_SEARCH_BACKEND);
  });

  it('a backend without what it needs does not start', () => {
    expect(() => ToolRunnerConfigSchema.parse({ SKALD_WEB_SEARCH_BACKEND: 'searxng' })).toThrow(/base URL/);
    expect(() => ToolRunnerConfigSchema.parse({ SKALD_WEB_SEARCH_BACKEND: 'brave' })).toThrow(/API key/);
  });
});
