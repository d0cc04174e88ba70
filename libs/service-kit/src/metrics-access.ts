import { createHash, timingSafeEqual } from 'node:crypto';
import type { BaseConfig } from './config';

/** What the guard reads of a request: the bearer header and the TCP peer (never a forwarded-for header). */
export interface MetricsRequest {
  headers: Record<string, unknown>;
  socket?: { remoteAddress?: string };
}

/** Who may read an app's `/metrics` (every app's, through OpsModule). */
export interface MetricsAccess {
  /** `SKALD_METRICS_TOKEN`: the scrape credential Prometheus sends (compared in constant time). */
  token?: string;
  /** `SKALD_METRICS_TRUST_LOOPBACK=on`: a loopback peer needs no token (local use; off in production). */
  trustLoopback: boolean;
  /**
   * Another bearer the app can verify itself (the gateway: an admin's token). Asked only for a bearer
   * that is not the scrape token; a throw is a refusal.
   */
  alsoAccept?: (bearer: string) => Promise<boolean> | boolean;
}

/** The peers `trustLoopback` trusts: the host's own loopback addresses as Node reports them, exactly. */
export const TRUSTED_LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** The access the shared settings give (`SKALD_METRICS_TOKEN`, `SKALD_METRICS_TRUST_LOOPBACK` of BaseConfigSchema). */
export function metricsAccessOf(
  config: Pick<BaseConfig, 'SKALD_METRICS_TOKEN' | 'SKALD_METRICS_TRUST_LOOPBACK'>,
): MetricsAccess {
  return { token: config.SKALD_METRICS_TOKEN, trustLoopback: config.SKALD_METRICS_TRUST_LOOPBACK === 'on' };
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * `/metrics` answers the scrape token (from any peer), a bearer `alsoAccept` vouches for, or — only
 * when `trustLoopback` is set — a loopback peer without a token. Off by default: on a host or pod
 * shared with other processes (a sidecar, a sandboxed command, another user's service) loopback is
 * not the operator. The token is compared as SHA-256 digests with `timingSafeEqual`, so neither its
 * length nor a common prefix shows in the time a refusal takes.
 */
export function metricsGuard(access: MetricsAccess): (req: MetricsRequest) => Promise<boolean> {
  const expected = access.token ? digest(access.token) : null;
  return async (req) => {
    if (access.trustLoopback && TRUSTED_LOOPBACK.has(req.socket?.remoteAddress ?? '')) return true;
    const header = req.headers.authorization;
    const bearer = typeof header === 'string' ? header.match(/^Bearer\s+(\S+)$/i)?.[1] : undefined;
    if (!bearer) return false;
    if (expected && timingSafeEqual(digest(bearer), expected)) return true;
    if (!access.alsoAccept) return false;
    try {
      return (await access.alsoAccept(bearer)) === true;
    } catch {
      return false;
    }
  };
}
