import { gzipSync } from 'node:zlib';
import { webSources } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import { encode } from 'iconv-lite';
import { ToolError } from '../tool-error';
import { DEFAULT_WEB_FETCH_LIMITS, WebFetcher, type WebFetchLimits } from './web-fetcher';
import { makePdf, startTestWebServer, type TestWebServer } from './web-test-server';

/**
 * web_fetch against pages served by this test on loopback. The fetcher trusts the name
 * `localhost` (SKALD_WEB_ALLOW_HOSTS=localhost), never the address 127.0.0.1 itself: a redirect or
 * a URL naming 127.0.0.1, 169.254.169.254 or a name that resolves to loopback is what an attacker
 * would write, and is refused.
 */
const ARTICLE = `<!doctype html><html><head><title>Release notes</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Version 5</h1><p>Version 5 adds <strong>streaming</strong> and a <a href="/docs/streaming">guide</a>.
${'It is faster than version 4 in every benchmark we ran. '.repeat(40)}</p>
<h2>Breaking changes</h2><ul><li>Node 18 is no longer supported.</li><li>The <code>legacy</code> flag is gone.</li></ul></article>
<footer>© Example</footer><script>document.write('tracking')</script></body></html>`;

let server: TestWebServer;
let pdf: Buffer;
let bigPdf: Buffer;

const limits = (over: Partial<WebFetchLimits> = {}): WebFetchLimits => ({ ...DEFAULT_WEB_FETCH_LIMITS, ...over });
const fetcher = (over: Partial<WebFetchLimits> = {}, allow = ['localhost']) =>
  new WebFetcher(new AddressPolicy(allow, 'SKALD_WEB_ALLOW_HOSTS'), limits(over));
const signal = () => new AbortController().signal;
const fetchText = (url: string, over: Partial<WebFetchLimits> = {}, maxChars?: number) =>
  fetcher(over).fetchText(url, { signal: signal(), maxChars });

async function refusal(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  pdf = await makePdf(3, 'the quarterly figures grew by 12 percent');
  bigPdf = await makePdf(30, 'a long report');
  server = await startTestWebServer({
    '/article': (_q, s) => s.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ARTICLE),
    '/hop1': (_q, s) => s.writeHead(301, { location: '/hop2' }).end(),
    '/hop2': (_q, s) => s.writeHead(302, { location: `http://localhost:${server.port}/article` }).end(),
    '/loop': (q, s) => s.writeHead(302, { location: `/loop?n=${Math.random()}` }).end(),
    '/to-loopback': (_q, s) => s.writeHead(302, { location: `http://127.0.0.1:${server.port}/article` }).end(),
    '/to-metadata': (_q, s) => s.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    '/to-file': (_q, s) => s.writeHead(302, { location: 'file:///etc/passwd' }).end(),
    '/slow': (_q, s) => {
      s.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => s.write('.'), 200);
      s.on('close', () => clearInterval(t));
    },
    '/huge': (_q, s) => {
      s.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      let sent = 0;
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = () => {
        while (sent < 200 * 1024 * 1024) {
          sent += chunk.length;
          if (!s.write(chunk)) return void s.once('drain', pump);
        }
        s.end();
      };
      s.on('close', () => (sent = Infinity));
      pump();
    },
    '/gzip-bomb': (_q, s) =>
      s
        .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        .end(gzipSync(Buffer.alloc(64 * 1024 * 1024, 'z'))),
    '/cp1252-header': (_q, s) =>
      s
        .writeHead(200, { 'content-type': 'text/plain; charset=windows-1252' })
        .end(encode('Café – “quoted” €5', 'windows-1252')),
    '/cp1252-meta': (_q, s) =>
      s
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          encode(
            '<html><head><meta charset="windows-1252"><title>Crème brûlée</title></head><body><p>Crème brûlée à 5 €</p></body></html>',
            'windows-1252',
          ),
        ),
    '/latin2-http-equiv': (_q, s) =>
      s
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          encode(
            '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-2"></head><body><p>Zażółć gęślą jaźń</p></body></html>',
            'ISO-8859-2',
          ),
        ),
    '/sjis': (_q, s) =>
      s
        .writeHead(200, { 'content-type': 'text/plain; charset=Shift_JIS' })
        .end(encode('日本語のテキスト', 'Shift_JIS')),
    '/utf16-bom': (_q, s) =>
      s
        .writeHead(200, { 'content-type': 'text/plain' })
        .end(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße aus UTF-16', 'utf16le')])),
    '/bogus-charset': (_q, s) =>
      s.writeHead(200, { 'content-type': 'text/plain; charset=x-no-such' }).end('plain ünïcode'),
    '/report.pdf': (_q, s) => s.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf),
    '/big.pdf': (_q, s) => s.writeHead(200, { 'content-type': 'application/pdf' }).end(bigPdf),
    '/broken.pdf': (_q, s) =>
      s.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7 this is not really a pdf'),
    '/image.png': (_q, s) => s.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(100)),
    '/untyped': (_q, s) => s.writeHead(200, {}).end(Buffer.from([0, 1, 2])),
    '/data.json': (_q, s) => s.writeHead(200, { 'content-type': 'application/json' }).end('{"version":5}'),
    '/gone': (_q, s) => s.writeHead(410, { 'content-type': 'text/plain' }).end('gone'),
  });
});
afterAll(() => server.close());

describe('web_fetch', () => {
  it('turns an article page into Markdown of its main content, naming its final URL', async () => {
    const text = await fetchText(server.url('/article'));
    expect(text.split('\n').slice(0, 4)).toEqual([
      `URL: ${server.url('/article')}`,
      'Title: Release notes',
      'Content-Type: text/html; charset=utf-8',
      'Truncated: no',
    ]);
    expect(text).toContain('**streaming**');
    expect(text).toContain(`[guide](${server.url('/docs/streaming')})`);
    expect(text).toMatch(/## Breaking changes/);
    expect(text).toMatch(/-\s+Node 18 is no longer supported\./);
    expect(text).not.toContain('tracking');
    expect(text).not.toContain('About');
    expect(webSources('web_fetch', text)).toEqual([{ title: 'Release notes', url: server.url('/article') }]);
  });

  it('follows redirects within the host and says where it landed', async () => {
    const text = await fetchText(server.url('/hop1'));
    expect(text).toMatch(new RegExp(`^URL: ${server.url('/article')}\nRedirected from: ${server.url('/hop1')}\n`));
    expect(text).toContain('Version 5');
  });

  it('stops after the redirect bound', async () => {
    const before = server.hits.get('/loop') ?? 0;
    const e = await refusal(fetchText(server.url('/loop'), { maxRedirects: 5 }));
    expect(e.message).toBe(`web_fetch: more than 5 redirects from ${server.url('/loop')}`);
    expect((server.hits.get('/loop') ?? 0) - before).toBe(6);
  });

  it('does not follow a redirect to 127.0.0.1, and refuses to fetch it when asked', async () => {
    const before = server.hits.get('/article') ?? 0;
    const text = await fetchText(server.url('/to-loopback'));
    expect(text).toContain(`not followed: http://127.0.0.1:${server.port}/article`);
    const e = await refusal(fetchText(`http://127.0.0.1:${server.port}/article`));
    expect(e.code).toBe('forbidden');
    expect(e.message).toMatch(/127\.0\.0\.1 .*loopback, private or link-local.*SKALD_WEB_ALLOW_HOSTS/);
    expect(server.hits.get('/article') ?? 0).toBe(before);
  });

  it('does not follow a redirect to the metadata service, and refuses to fetch it when asked', async () => {
    const text = await fetchText(server.url('/to-metadata'));
    expect(text).toContain('not followed: http://169.254.169.254/latest/meta-data/');
    const started = Date.now();
    const e = await refusal(fetchText('http://169.254.169.254/latest/meta-data/'));
    expect(e.code).toBe('forbidden');
    expect(Date.now() - started).toBeLessThan(1000); // refused before any connection attempt
  });

  it('refuses a name that resolves to loopback at connect time (not allow-listed)', async () => {
    const connections = server.connections();
    const e = await refusal(fetcher({}, []).fetchText(server.url('/article'), { signal: signal() }));
    expect(e.code).toBe('forbidden');
    expect(e.message).toContain('localhost resolves to 127.0.0.1');
    expect(server.connections()).toBe(connections);
  });

  it('refuses a redirect to something other than http(s)', async () => {
    const e = await refusal(fetchText(server.url('/to-file')));
    expect(e.message).toContain('redirects to something that is no http(s) URL');
  });

  it('ends a slow body at the time bound', async () => {
    const started = Date.now();
    const e = await refusal(fetchText(server.url('/slow'), { timeoutMs: 1_500 }));
    expect(e.code).toBe('timed_out');
    expect(e.message).toBe(`web_fetch: ${server.url('/slow')} took longer than 1.5 s`);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('reads a huge body up to the byte bound and says it was cut', async () => {
    const started = Date.now();
    const text = await fetchText(server.url('/huge'), { maxBytes: 256 * 1024 }, 5_000);
    expect(text).toContain(
      'Truncated: yes (the first 5000 characters of a longer text) (the body was cut at 262144 bytes)',
    );
    expect(text.split('\n\n')[1]).toBe('a'.repeat(5_000));
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('bounds a compressed body by its decompressed bytes (a gzip bomb)', async () => {
    const text = await fetchText(server.url('/gzip-bomb'), { maxBytes: 1024 * 1024 }, 1_000);
    expect(text).toContain('(the body was cut at 1048576 bytes)');
  });

  it('cuts the text at max_chars and says how much there was', async () => {
    const text = await fetchText(server.url('/article'), {}, 1_000);
    expect(text).toMatch(/Truncated: yes \(the first 1000 of \d{4} characters\)/);
    expect(text.split('\n\n').slice(1).join('\n\n')).toHaveLength(1_000);
  });

  it.each([
    ['/cp1252-header', 'Café – “quoted” €5'],
    ['/cp1252-meta', 'Crème brûlée à 5 €'],
    ['/latin2-http-equiv', 'Zażółć gęślą jaźń'],
    ['/sjis', '日本語のテキスト'],
    ['/utf16-bom', 'Grüße aus UTF-16'],
    ['/bogus-charset', 'plain ünïcode'],
  ])('decodes %s by its charset', async (path, expected) => {
    expect(await fetchText(server.url(path))).toContain(expected);
  });

  it('reads a PDF page by page', async () => {
    const text = await fetchText(server.url('/report.pdf'));
    expect(text).toContain('Content-Type: application/pdf');
    expect(text).toContain('Truncated: no');
    for (const n of [1, 2, 3])
      expect(text).toContain(`--- page ${n} ---\nPage ${n}: the quarterly figures grew by 12 percent`);
  });

  it('reads at most the page bound of a PDF and names what it left out', async () => {
    const text = await fetchText(server.url('/big.pdf'), { pdfMaxPages: 4 });
    expect(text).toContain('(4 of 30 pages read)');
    expect(text).toContain('--- page 4 ---');
    expect(text).not.toContain('--- page 5 ---');
  });

  it('says why a broken PDF cannot be read', async () => {
    const e = await refusal(fetchText(server.url('/broken.pdf')));
    expect(e.message).toMatch(/^web_fetch: .*broken\.pdf: not a readable PDF/);
  });

  it('refuses other types with a clear error', async () => {
    expect((await refusal(fetchText(server.url('/image.png')))).message).toBe(
      `web_fetch: ${server.url('/image.png')} is image/png; web_fetch reads HTML, PDF, plain text, Markdown, CSV, JSON and XML only`,
    );
    expect((await refusal(fetchText(server.url('/untyped')))).message).toContain('is of no stated type');
  });

  it('returns JSON as it is, and an HTTP error as an error', async () => {
    expect(await fetchText(server.url('/data.json'))).toMatch(/\n\n\{"version":5\}$/);
    expect((await refusal(fetchText(server.url('/gone')))).message).toBe(
      `web_fetch: ${server.url('/gone')} answered 410 Gone`,
    );
  });

  it('refuses what is no http(s) URL before any request', async () => {
    for (const url of [
      'file:///etc/passwd',
      'gopher://localhost/',
      `http://u:p@localhost:${server.port}/article`,
      'not a url',
    ])
      expect((await refusal(fetchText(url))).code).toBe('invalid_argument');
  });

  it('stops when the call is cancelled', async () => {
    const ac = new AbortController();
    const p = fetcher().fetchText(server.url('/slow'), { signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    await expect(p).rejects.toThrow('cancelled');
  });
});
