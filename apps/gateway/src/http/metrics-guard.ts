import type { AuthService } from '../auth/auth.service';

interface Req {
  headers: Record<string, unknown>;
  socket?: { remoteAddress?: string };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** On the gateway, `/metrics` answers loopback or an admin token only. */
export function metricsGuard(): { bind(auth: AuthService): void; check(req: Req): Promise<boolean> } {
  let auth: AuthService | null = null;
  return {
    bind(a) {
      auth = a;
    },
    async check(req) {
      if (LOOPBACK.has(req.socket?.remoteAddress ?? '')) return true;
      const header = req.headers.authorization;
      const bearer = typeof header === 'string' ? header.match(/^Bearer\s+(\S+)$/i)?.[1] : undefined;
      if (!bearer || !auth) return false;
      try {
        return (await auth.authenticate(bearer)).actor.role === 'admin';
      } catch {
        return false;
      }
    },
  };
}
