import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthService } from '../auth/auth.service';

interface Req {
  headers: Record<string, unknown>;
  socket?: { remoteAddress?: string };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export interface MetricsAccess {
  /** `SKALD_METRICS_TOKEN`: the scrape credential (compared in constant time). */
  token?: string;
  /** `SKALD_METRICS_TRUST_LOOPBACK=on`: a loopback peer needs no token (local use; off in production). */
  trustLoopback: boolean;
}

/**
 * On the gateway, `/metrics` answers the scrape token, an admin's token, or — only when `trustLoopback`
 * is set — a loopback peer. Off by default: on a host or pod shared with other processes (a sidecar,
 * a sandboxed command, another user's service) loopback is not the operator.
 */
export function metricsGuard(access: MetricsAccess): {
  bind(auth: AuthService): void;
  check(req: Req): Promise<boolean>;
} {
  let auth: AuthService | null = null;
  const expected = access.token ? digest(access.token) : null;
  return {
    bind(a) {
      auth = a;
    },
    async check(req) {
      if (access.trustLoopback && LOOPBACK.has(req.socket?.remoteAddress ?? '')) return true;
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
