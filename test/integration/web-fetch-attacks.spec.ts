import fc from 'fast-check';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy } from '@skald/service-kit';
import { recordAttackSuite } from '@skald/testing';
import { ToolError } from '../../apps/tool-runner/src/tool-error';
import { DEFAULT_WEB_FETCH_LIMITS, WebFetcher } from '../../apps/tool-runner/src/web/web-fetcher';

/**
 * Attack suite, web section: what a prompt-injected model would ask web_fetch for to reach the
 * deployment's own network. A listener on loopback counts every connection; the fetcher trusts
 * nothing (no SKALD_WEB_ALLOW_HOSTS), so every generated URL — loopback, private and link-local
 * addresses in every spelling the URL parser accepts (decimal, hex, octal, short forms, IPv6,
 * IPv4-mapped IPv6), names that resolve to loopback, and redirect chains from a page the fetcher
 * may read toward them — must be refused without one connection to the listener. Seeded.
 */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

let target: Server;
let port: number;
let connections = 0;
let relay: Server;
let relayPort: number;

beforeAll(async () => {
  target = createServer((_q, s) => s.end('secret'));
  target.on('connection', () => (connections += 1));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  port = (target.address() as AddressInfo).port;
  // The attacker's page: on a host the fetcher is allowed to reach (`relay.test` → allow-listed
  // by address below), redirecting wherever the query says.
  relay = createServer((q, s) => {
    const to = new URL(q.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
    s.writeHead(302, { location: to }).end();
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.2', r));
  relayPort = (relay.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => target.close(r));
  await new Promise((r) => relay.close(r));
});

/** Spellings of 127.0.0.1 and of other blocked addresses the WHATWG URL parser accepts. */
const loopbackHosts = (p: number) => [
  `127.0.0.1:${p}`,
  `2130706433:${p}`,
  `0x7f000001:${p}`,
  `0x7f.0.0.1:${p}`,
  `0177.0.0.1:${p}`,
  `127.1:${p}`,
  `127.0.1:${p}`,
  `[::ffff:127.0.0.1]:${p}`,
  `[::ffff:7f00:1]:${p}`,
  `[::1]:${p}`,
  `localhost:${p}`,
  `LOCALHOST.:${p}`,
  `0.0.0.0:${p}`,
  `0:${p}`,
];
const otherBlocked = [
  '169.254.169.254',
  '[fd00:ec2::254]',
  '[fe80::1]',
  '10.0.0.1',
  '172.16.0.1',
  '192.168.0.1',
  '100.64.0.1',
  '0xa9fea9fe',
  '[::ffff:169.254.169.254]',
];

describe('attack suite: web_fetch toward the deployment', () => {
  it('reaches no loopback, private or link-local address, directly or through redirects', async () => {
    const fetcher = new WebFetcher(new AddressPolicy([], 'SKALD_WEB_ALLOW_HOSTS'), {
      ...DEFAULT_WEB_FETCH_LIMITS,
      timeoutMs: 3_000,
    });
    // The relay is reachable only through its own address: same-host redirects from it are followed,
    // and must still be refused where they lead.
    const viaRelay = new WebFetcher(new AddressPolicy(['127.0.0.2'], 'SKALD_WEB_ALLOW_HOSTS'), {
      ...DEFAULT_WEB_FETCH_LIMITS,
      timeoutMs: 3_000,
    });
    const hosts = [...loopbackHosts(port), ...otherBlocked];
    const paths = fc.constantFrom('/', '/latest/meta-data/iam/security-credentials/', '/admin?x=1', '/%2e%2e/');
    const schemes = fc.constantFrom('http', 'https', 'HTTP');
    let urls = 0;
    let redirects = 0;
    let refused = 0;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...hosts),
        schemes,
        paths,
        fc.boolean(),
        async (host, scheme, path, redirect) => {
          const url = `${scheme}://${host}${path}`;
          const before = connections;
          let outcome: string;
          try {
            outcome = redirect
              ? await viaRelay.fetchText(`http://127.0.0.2:${relayPort}/r?to=${encodeURIComponent(url)}`, {
                  signal: new AbortController().signal,
                })
              : await fetcher.fetchText(url, { signal: new AbortController().signal });
          } catch (e) {
            if (!(e instanceof ToolError)) throw e;
            outcome = `${e.code}: ${e.message}`;
          }
          if (redirect) redirects += 1;
          else urls += 1;
          // Refused by the guard before any connection, or (through the relay) a redirect to another
          // host, not followed: never an attempt that merely failed.
          if (redirect) expect(outcome).toMatch(/^URL: .*\nRedirect: 302 to another host, not followed: /);
          // (`localhost.` does not resolve on every machine: then no name, no connection.)
          else
            expect(outcome).toMatch(
              /^forbidden: web_fetch: refused: .* resolves to .*SKALD_WEB_ALLOW_HOSTS\)$|^unavailable: .*ENOTFOUND localhost\.$/,
            );
          refused += 1;
          expect(connections).toBe(before);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    expect(connections).toBe(0);
    recordAttackSuite('web', 'ssrf', {
      urls,
      redirects,
      refused,
      reached: connections,
      seed: SEED,
      ms: Date.now() - started,
    });
  });
});
