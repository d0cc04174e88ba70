import { request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CONTENT_SECURITY_POLICY } from './web.controller';

/** The gateway's own paths: never forwarded to the web client's dev server. */
const GATEWAY_PATH = /^\/(api|healthz|readyz|metrics)(\/|$)/;

/** `SKALD_WEB_DEV_URL` is accepted only as a plain http origin on loopback: the dev server is this machine's. */
export function isLoopbackDevUrl(value: string): boolean {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return false;
  }
  return (
    u.protocol === 'http:' &&
    ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) &&
    u.port !== '' &&
    u.username === '' &&
    u.password === '' &&
    (u.pathname === '/' || u.pathname === '') &&
    u.search === '' &&
    u.hash === ''
  );
}

/** The dev server's origin when dev mode is on; throws when it is asked for with `NODE_ENV=production`. */
export function devServerUrl(config: { SKALD_WEB_DEV_URL?: string; NODE_ENV: string }): URL | null {
  if (!config.SKALD_WEB_DEV_URL) return null;
  if (config.NODE_ENV === 'production')
    throw new Error('SKALD_WEB_DEV_URL is for development only; unset it with NODE_ENV=production');
  return new URL(config.SKALD_WEB_DEV_URL);
}

/**
 * Where a request goes on the dev server, or null when it is not the web client's: a path of the gateway,
 * or a request target that is not a plain absolute path (`//host/…`, `http://…`, backslashes). The result's
 * origin is always `base`'s.
 */
export function devTarget(base: URL, rawUrl: string): string | null {
  if (!rawUrl.startsWith('/') || rawUrl.startsWith('//') || rawUrl.includes('\\')) return null;
  let u: URL;
  try {
    u = new URL(rawUrl, base);
  } catch {
    return null;
  }
  if (u.origin !== base.origin || u.pathname.startsWith('//') || GATEWAY_PATH.test(u.pathname)) return null;
  return u.pathname + u.search;
}

/**
 * The policy in dev mode: production's, plus what Vite's dev client needs — the styles it injects inline and
 * its HMR WebSocket, which connects straight to the dev server's port.
 */
export function devContentSecurityPolicy(base: URL): string {
  return CONTENT_SECURITY_POLICY.split('; ')
    .map((d) => {
      if (d.startsWith('style-src ')) return `${d} 'unsafe-inline'`;
      if (d.startsWith('connect-src ')) return `${d} ws://${base.host}`;
      return d;
    })
    .join('; ');
}

/**
 * Express middleware for `npm run dev`: GET and HEAD requests for the web client are streamed to Vite's dev
 * server at `base` (always that host and port: the request target is rebuilt against it); anything else
 * falls through to the gateway's routes.
 */
export function devProxy(base: URL) {
  const csp = devContentSecurityPolicy(base);
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const path = req.method === 'GET' || req.method === 'HEAD' ? devTarget(base, req.url ?? '') : null;
    if (path === null) return next();
    const headers = { ...req.headers, host: base.host };
    delete headers.cookie;
    delete headers.authorization;
    const upstream = request(
      {
        protocol: 'http:',
        hostname: base.hostname.replace(/^\[|\]$/g, ''),
        port: Number(base.port),
        method: req.method,
        path,
        headers,
      },
      (answer) => {
        const out = { ...answer.headers };
        delete out['content-security-policy'];
        res.writeHead(answer.statusCode ?? 502, {
          ...out,
          'content-security-policy': csp,
          'x-content-type-options': 'nosniff',
        });
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('The web client dev server (Vite) does not answer; `npm run dev` starts it.');
    });
    req.on('aborted', () => upstream.destroy());
    upstream.end();
  };
}
