import fc from 'fast-check';
import { BypassScope, parseWebUrl } from '@skald/contracts';
import { GateInput } from './gate-input';
import { bypassCovers, narrowScopes } from './session-bypass';

/**
 * "Approve for this session" on a `web_fetch` opens that URL's host, never the web: a later fetch
 * is covered exactly when the URL parser the runner connects with (`parseWebUrl`) gives it the
 * same host — another host, a subdomain, a look-alike or a URL with user info asks again.
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.log(`web session scopes: seed=${SEED} (FC_SEED=${SEED} replays)`);

const fetch = (url: unknown): GateInput => ({
  toolName: 'web_fetch',
  arguments: { url },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});
const covered = (approved: string, later: unknown): boolean =>
  narrowScopes('web_fetch', { url: approved }, null).some((s) => bypassCovers(s, fetch(later)));

describe('session approval of web_fetch: one host', () => {
  it('names the host, and covers that host only', () => {
    expect(narrowScopes('web_fetch', { url: 'https://Docs.Python.org/3/whatsnew/' }, null)).toEqual([
      { tool: 'web_fetch', host: 'docs.python.org' },
    ]);
    expect(covered('https://docs.python.org/3/', 'http://DOCS.python.org/2/x?q=1#f')).toBe(true);
    for (const later of [
      'https://python.org/',
      'https://www.docs.python.org/',
      'https://docs.python.org.evil.example/',
      'https://docs.python.org@evil.example/',
      'https://evil.example/?u=https://docs.python.org/',
      'ftp://docs.python.org/',
      'not a url',
      42,
      undefined,
    ])
      expect([later, covered('https://docs.python.org/3/', later)]).toEqual([later, false]);
  });

  it('offers no session approval for a URL the runner refuses', () => {
    for (const url of ['javascript:alert(1)', 'https://user:pw@example.org/', '', 'x'.repeat(3000), null])
      expect(narrowScopes('web_fetch', { url }, null)).toEqual([]);
  });

  it('a host scope covers no other tool, and a tool-wide scope no longer covers a fetch', () => {
    const scope: BypassScope = { tool: 'web_fetch', host: 'example.org' };
    expect(bypassCovers(scope, { ...fetch('https://example.org/'), toolName: 'web_search' })).toBe(false);
    expect(bypassCovers({ tool: 'web_fetch' }, fetch('https://example.org/'))).toBe(false);
    expect(
      bypassCovers({ tool: 'web_search' }, { ...fetch(''), toolName: 'web_search', arguments: { query: 'q' } }),
    ).toBe(true);
  });

  it('generated URL pairs: covered exactly when the runner would contact the same host', () => {
    const host = fc.oneof(
      fc.domain(),
      fc.constantFrom('127.0.0.1', '[::1]', '169.254.169.254', 'xn--bcher-kva.example', 'localhost'),
    );
    const url = fc
      .tuple(
        fc.constantFrom('http', 'https', 'HTTPS', 'ftp', 'file'),
        fc.constantFrom('', 'user@', 'user:pw@'),
        host,
        fc.constantFrom('', ':8080', ':443'),
        fc.webPath(),
      )
      .map(([scheme, auth, h, port, path]) => `${scheme}://${auth}${h}${port}${path}`);
    let pairs = 0;
    fc.assert(
      fc.property(url, url, (a, b) => {
        pairs++;
        const scopes = narrowScopes('web_fetch', { url: a }, null);
        const hostA = parseWebUrl(a)?.hostname;
        const hostB = parseWebUrl(b)?.hostname;
        // a scope is offered only for a URL the runner would fetch, and is valid on the wire
        expect(scopes.length > 0).toBe(hostA !== undefined && /^[a-z0-9.:[\]_-]{1,253}$/.test(hostA));
        for (const s of scopes) expect(BypassScope.safeParse(s).success).toBe(true);
        const isCovered = scopes.some((s) => bypassCovers(s, fetch(b)));
        expect(isCovered).toBe(scopes.length > 0 && hostB !== undefined && hostB === hostA);
      }),
      { seed: SEED, numRuns: 3000 },
    );
    expect(pairs).toBeGreaterThanOrEqual(3000);
  });
});
