import { Controller, Get, Param, Res } from '@nestjs/common';
import { Public } from '@skald/service-kit/public-route';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';

/**
 * The policy every page of the web client is served with: scripts and styles only from files of
 * this origin (the bundle has no inline code), no plugins, no framing, no base or form hijacking,
 * connections only back to this origin (REST and the WebSocket). Model text and tool output are
 * rendered as text or sanitised markdown; this is the second wall if that ever fails.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // blob: the file viewer shows a workspace image it fetched with the bearer token
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/** The part of Express's response this controller uses (the gateway runs on @nestjs/platform-express). */
interface Response {
  status(code: number): this;
  type(type: string): this;
  setHeader(name: string, value: string): void;
  send(body: string | Buffer): void;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.webmanifest': 'application/manifest+json',
};

/** Where the built web client is: `SKALD_WEB_DIST`, or the `@skald/web` workspace's `dist`. */
export function webDist(): string | null {
  if (process.env.SKALD_WEB_DIST) return process.env.SKALD_WEB_DIST;
  try {
    return join(dirname(require.resolve('@skald/web/package.json')), 'dist');
  } catch {
    return null;
  }
}

/** Serves the web client (`apps/web`, built by Vite) at `/`: public, it holds no user data. */
@Public()
@Controller()
export class WebController {
  private readonly dist = webDist();

  @Get()
  index(@Res() res: Response): void {
    this.secure(res);
    const file = this.dist ? join(this.dist, 'index.html') : null;
    if (!file || !existsSync(file)) {
      res.status(503).type('text/plain').send('The web client is not built: run `npm run build`.');
      return;
    }
    res.setHeader('cache-control', 'no-cache');
    res.type('text/html; charset=utf-8').send(readFileSync(file));
  }

  /** The service worker: at the root, so its scope is the whole app; never cached (its updates are how a new build
   * reaches an installed app). */
  @Get('sw.js')
  serviceWorker(@Res() res: Response): void {
    this.secure(res);
    const file = this.dist ? join(this.dist, 'sw.js') : null;
    if (!file || !existsSync(file)) {
      res.status(404).type('text/plain').send('not found');
      return;
    }
    res.setHeader('cache-control', 'no-cache');
    res.type(TYPES['.js']).send(readFileSync(file));
  }

  @Get('assets/:file')
  asset(@Param('file') name: string, @Res() res: Response): void {
    this.secure(res);
    const type = TYPES[extname(name)];
    const file = this.dist && /^[\w.-]+$/.test(name) && type ? join(this.dist, 'assets', name) : null;
    if (!file || !existsSync(file)) {
      res.status(404).type('text/plain').send('not found');
      return;
    }
    // Vite's names carry a content hash (a new build is a new name); the manifest and its icons keep theirs.
    const hashed = /-[\w-]{8}\.\w+$/.test(name);
    res.setHeader('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
    res.type(type).send(readFileSync(file));
  }

  private secure(res: Response): void {
    securePage(res);
  }
}

/** The headers every page of this origin is served with: the CSP above, no sniffing, no referrer, no framing. */
export function securePage(res: { setHeader(name: string, value: string): void }): void {
  res.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
}
