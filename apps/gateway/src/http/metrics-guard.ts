import type { AuthService } from '../auth/auth.service';

/**
 * The gateway's addition to service-kit's `/metrics` guard (libs/service-kit/src/metrics-access.ts,
 * which every app uses: the scrape token, loopback only with SKALD_METRICS_TRUST_LOOPBACK=on): an
 * admin's bearer token, which only the gateway can verify. Bound to the AuthService once Nest has
 * made it; before that, and for any token that fails to authenticate, no.
 */
export function adminMetricsBearer(): {
  bind(auth: AuthService): void;
  accepts(bearer: string): Promise<boolean>;
} {
  let auth: AuthService | null = null;
  return {
    bind(a) {
      auth = a;
    },
    async accepts(bearer) {
      if (!auth) return false;
      try {
        return (await auth.authenticate(bearer)).actor.role === 'admin';
      } catch {
        return false;
      }
    },
  };
}
