import fc from 'fast-check';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { GatewayConfigSchema } from '../config';
import { devContentSecurityPolicy, devProxy, devServerUrl, devTarget } from './dev-proxy';
import { CONTENT_SECURITY_POLICY } from './web.controller';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const devUrl = GatewayConfigSchema.shape.SKALD_WEB_DEV_URL;

/** Request targets a hostile client sends: anything, plus the shapes that name another host. */
const hostilePath = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.webPath(),
  fc.webUrl({ withQueryParameters: true }),
  fc
    .tuple(
      fc.constantFrom(
        '//',
        '/\\',
        '\\\\',
        '/%2F%2F',
        '/..//',
        '/@fs/',
        '/api/',
        '/healthz',
        '/metrics?',
        '/./api/',
        '/%61pi/',
        '',
      ),
      fc.domain(),
      fc.webPath(),
    )
    .map(([a, b, c]) => `${a}${b}${c}`),
);

describe('the production Content-Security-Policy', () => {
  it('is exactly as strict as before dev mode existed', () => {
    expect(CONTENT_SECURITY_POLICY).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; " +
        "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
    );
  });

  it('in dev mode adds only inline styles and the dev server HMR socket', () => {
    const dev = devContentSecurityPolicy(new URL('http://127.0.0.1:5199'));
    expect(dev).toContain("style-src 'self' 'unsafe-inline'");
    expect(dev).toContain("connect-src 'self' ws://127.0.0.1:5199");
    expect(dev).toContain("script-src 'self';");
    expect(dev.replace(" 'unsafe-inline'", '').replace(' ws://127.0.0.1:5199', '')).toBe(CONTENT_SECURITY_POLICY);
  });
});

describe('SKALD_WEB_DEV_URL', () => {
  it('accepts a loopback http origin with a port', () => {
    for (const ok of ['http://127.0.0.1:5173', 'http://localhost:5173/', 'http://[::1]:4000'])
      expect(devUrl.safeParse(ok).success).toBe(true);
  });

  it('is off unless set, and refused with NODE_ENV=production', () => {
    expect(devServerUrl({ NODE_ENV: 'production' })).toBeNull();
    expect(devServerUrl({ NODE_ENV: 'development', SKALD_WEB_DEV_URL: 'http://127.0.0.1:5173' })?.origin).toBe(
      'http://127.0.0.1:5173',
    );
    expect(() => devServerUrl({ NODE_ENV: 'production', SKALD_WEB_DEV_URL: 'http://127.0.0.1:5173' })).toThrow(
      /development only/,
    );
  });

  it('refuses every other URL (generated)', () => {
    for (const bad of [
      'https://127.0.0.1:5173',
      'http://127.0.0.1',
      'http://10.0.0.1:5173',
      'http://127.0.0.1.evil.com:80',
      'http://u:p@127.0.0.1:1',
      'http://127.0.0.1:5173/x',
      'file:///etc/passwd',
    ])
      expect(devUrl.safeParse(bad).success).toBe(false);
    fc.assert(
      fc.property(
        fc.oneof(fc.webUrl({ withFragments: true, withQueryParameters: true }), fc.string({ maxLength: 100 })),
        (u) => {
          const ok = devUrl.safeParse(u).success;
          if (ok) {
            const parsed = new URL(u);
            expect(['127.0.0.1', 'localhost', '[::1]']).toContain(parsed.hostname);
            expect(parsed.protocol).toBe('http:');
          }
        },
      ),
      { seed: SEED, numRuns: 5000 },
    );
  });
});

describe('where a request goes in dev mode', () => {
  const base = new URL('http://127.0.0.1:5199');

  it('never leaves the dev server and never takes a gateway path (generated)', () => {
    console.log(`dev proxy property seed: ${SEED}`);
    fc.assert(
      fc.property(hostilePath, (p) => {
        const t = devTarget(base, p);
        if (t === null) return;
        expect(t.startsWith('/') && !t.startsWith('//')).toBe(true);
        const u = new URL(t, base);
        expect(u.origin).toBe(base.origin);
        expect(u.pathname + u.search).toBe(t);
        expect(u.pathname).not.toMatch(/^\/(api|healthz|readyz|metrics)(\/|$)/);
      }),
      { seed: SEED, numRuns: 10_000 },
    );
  });

  it('forwards the web client, not the gateway', () => {
    expect(devTarget(base, '/')).toBe('/');
    expect(devTarget(base, '/@vite/client')).toBe('/@vite/client');
    expect(devTarget(base, '/src/main.tsx?t=1')).toBe('/src/main.tsx?t=1');
    for (const p of [
      '/api/auth/login',
      '/healthz',
      '/readyz',
      '/metrics',
      '//evil.example/x',
      'http://evil.example/',
      '/\\evil.example',
    ])
      expect(devTarget(base, p)).toBeNull();
  });

  describe('over real sockets', () => {
    let upstream: Server;
    let front: Server;
    const seen: { host?: string; url?: string; cookie?: string }[] = [];
    let upBase: URL;
    /** The request target as the gateway's server parsed it. */
    let received = '';

    beforeAll(async () => {
      upstream = createServer((req, res) => {
        seen.push({ host: req.headers.host, url: req.url, cookie: req.headers.cookie });
        res.setHeader('content-security-policy', 'default-src *');
        res.end('vite');
      });
      await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
      upBase = new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
      const proxy = devProxy(upBase);
      front = createServer((req, res) => {
        received = req.url ?? '';
        proxy(req, res, () => {
          res.statusCode = 404;
          res.end('gateway');
        });
      });
      await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    });
    afterAll(async () => {
      await new Promise((r) => front.close(r));
      await new Promise((r) => upstream.close(r));
    });

    const send = (path: string) =>
      new Promise<{ status: number; body: string; csp?: string }>((resolve) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: (front.address() as AddressInfo).port,
            path,
            headers: { host: 'evil.example', cookie: 'sid=1' },
          },
          (res) => {
            let body = '';
            res.on('data', (c) => (body += c));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, body, csp: res.headers['content-security-policy'] as string }),
            );
          },
        );
        req.on('error', () => resolve({ status: 0, body: '' }));
        req.end();
      });

    it('the forwarded request always goes to the configured host, with the dev CSP and without credentials (generated)', async () => {
      const paths = fc.sample(
        hostilePath.filter((p) => /^[\x21-\x7e]*$/.test(p)),
        { seed: SEED, numRuns: 150 },
      );
      let forwarded = 0;
      for (const p of [...paths, '/', '/api/x', '//evil.example/']) {
        seen.length = 0;
        received = '';
        const answer = await send(p);
        const target = devTarget(upBase, received);
        if (target === null) {
          expect(seen).toEqual([]);
          continue;
        }
        expect(answer.status === 200 || answer.status === 0).toBe(true);
        if (answer.status === 200) {
          expect(answer.body).toBe('vite');
          expect(answer.csp).toBe(devContentSecurityPolicy(upBase));
          expect(seen).toEqual([{ host: upBase.host, url: target, cookie: undefined }]);
          forwarded++;
        }
      }
      expect(forwarded).toBeGreaterThan(20);
    });
  });
});
