import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthService } from '../auth/auth.service';

interface Req {
  headers: Record<string, unknown>;
  socket?: { remoteAddress?: string };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * On the gateway, `/metrics` answers loopback, the scrape token `metricsToken` (compared in constant time) or an
 * admin's token only.
 */
export function metricsGuard(metricsToken?: string): {
  bind(auth: AuthService): void;
  check(req: Req): Promise<boolean>;
} {
  let auth: AuthService | null = null;
  const expected = metricsToken ? digest(metricsToken) : null;
  return {
    bind(a) {
      auth = a;
    },
    async check(req) {
      if (LOOPBACK.has(req.socket?.remoteAddress ?? '')) return true;
      const header = req.headers.authorization;
      const bearer = typeof header === 'string' ? header.match(/^Bearer\s+(\S+)$/i)?.[1] : undefined;
      if (!bearer) return false;
      if (expected && timingSafeEqual(digest(bearer), expected)) return true;
      if (!auth) return false;
      try {
        return (await auth.authenticate(bearer)).actor.role === 'admin';
      } catch {
        return false;
      }
    },
  };
}
