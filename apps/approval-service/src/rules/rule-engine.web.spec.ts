import fc from 'fast-check';
import { parseWebUrl, webDomainForm } from '@skald/contracts';
import { evaluate } from './rule-engine';
import type { GateInput, RuleRow } from './gate-input';
import { RuleSet, validateRule } from './rule-set';
import { ruleRow } from '../testing-fixtures/rule-row';

/**
 * `web_fetch` is judged by its URL's domain form, `web:<host>`: an admin allows a domain with a
 * path pattern `web:docs.python.org` or `web:*.python.org`. The host is the one the tool runner
 * connects to (the same WHATWG parser, `parseWebUrl`), so no spelling of a URL reaches another host
 * under a domain's rule. Hostile spellings are generated (seeded).
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

let seq = 0;
const rule = (r: Partial<RuleRow> & { toolPattern: string; action: string }): RuleRow =>
  ruleRow(++seq, r.toolPattern, r.action, { priority: 100, ...r });
const fetchCall = (url: unknown): GateInput => ({
  toolName: 'web_fetch',
  arguments: { url },
  agentId: 'main',
  source: 'web',
  isAdmin: false,
});

const RULES = new RuleSet([
  rule({ toolPattern: '*', action: 'require', priority: 999999 }),
  rule({ toolPattern: 'web_fetch', pathPattern: 'web:*.python.org', action: 'allow', priority: 10 }),
  rule({ toolPattern: 'web_fetch', pathPattern: 'web:example.com', action: 'allow', priority: 10 }),
  rule({ toolPattern: '@web', pathPattern: 'web:evil.test', action: 'deny', priority: 5 }),
  // A file rule never judges a URL, whatever it allows.
  rule({ toolPattern: '*', pathPattern: '/workspace/*', action: 'allow', priority: 20 }),
]);

describe('web_fetch: approval rules by domain', () => {
  it('allows the domains a rule names, and asks for every other', () => {
    expect(evaluate(RULES, fetchCall('https://docs.python.org/3/library/')).decision).toBe('allow');
    expect(evaluate(RULES, fetchCall('http://EXAMPLE.com:8080/x')).decision).toBe('allow');
    expect(evaluate(RULES, fetchCall('https://example.org/')).decision).toBe('require');
    expect(evaluate(RULES, fetchCall('https://python.org/')).decision).toBe('require');
    expect(evaluate(RULES, fetchCall('https://evil.test/steal')).decision).toBe('deny');
  });

  it('asks for what is no http(s) URL or carries credentials', () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/', 'https://user:pw@example.com/', 'example.com', 42])
      expect(evaluate(RULES, fetchCall(url)).decision).toBe('require');
  });

  it('web_search has no domain: only a rule without a path pattern decides it', () => {
    const call = { ...fetchCall(undefined), toolName: 'web_search', arguments: { query: 'x' } };
    expect(evaluate(RULES, call).decision).toBe('require');
    const allowSearch = new RuleSet([rule({ toolPattern: 'web_search', action: 'allow' })]);
    expect(evaluate(allowSearch, call).decision).toBe('allow');
  });

  it('refuses a malformed domain pattern when the rule is stored', () => {
    const base = { toolPattern: 'web_fetch', commandPattern: null, agentId: null, source: null, securityGroup: null };
    expect(() => validateRule({ ...base, pathPattern: 'web:exa mple.com', action: 'allow', priority: 1 })).toThrow(
      /domain pattern/,
    );
    expect(() =>
      validateRule({ ...base, pathPattern: 'web:*.python.org', action: 'allow', priority: 1 }),
    ).not.toThrow();
  });

  it('no spelling of a URL is allowed unless the host the runner connects to is under the domain', () => {
    const hosts = fc.constantFrom(
      'docs.python.org',
      'python.org',
      'docs.python.org.evil.test',
      'evil.test',
      'example.com',
      '127.0.0.1',
      '169.254.169.254',
      'xn--pthon-3ya.org',
    );
    const tricks = fc.constantFrom(
      (h: string, _o: string) => `https://${h}/`,
      (h: string, o: string) => `https://${o}/?u=https://${h}/`,
      (h: string, o: string) => `https://${o}#@${h}`,
      (h: string, o: string) => `https://${h}@${o}/`,
      (h: string, o: string) => `https://${o}\\@${h}/`,
      (h: string, o: string) => `https://${h}.${o}/`,
      (h: string, _o: string) => `HTTPS://${h.toUpperCase()}:443/..%2f`,
      (h: string, _o: string) => ` https://${h}/ `,
      (h: string, o: string) => `https://${h}%2e${o}/`,
      (h: string, _o: string) => `https://${h}\t/`,
      (h: string, _o: string) => `//${h}/`,
      (h: string, _o: string) => `https:${h}/`,
    );
    let tried = 0;
    fc.assert(
      fc.property(hosts, hosts, tricks, (h, o, spell) => {
        const url = spell(h, o);
        tried += 1;
        const decision = evaluate(RULES, fetchCall(url)).decision;
        const host = parseWebUrl(url)?.hostname ?? null;
        const underRule = host !== null && (host.endsWith('.python.org') || host === 'example.com');
        if (decision === 'allow') expect(underRule).toBe(true);
        if (underRule && host !== 'evil.test') expect(decision).toBe('allow');
        expect(webDomainForm(url)).toBe(host === null ? null : `web:${host}`);
      }),
      { seed: SEED, numRuns: 2000 },
    );
    expect(tried).toBeGreaterThanOrEqual(2000);
  });
});
