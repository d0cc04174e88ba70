import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { OidcFlowsRow, OidcHandoffsRow, UserIdentitiesRow } from '@skald/persistence';

/** Expired flows (and handoffs) one new flow deletes on its way in: a bounded statement. */
const SWEEP_BATCH = 500;

/** A sign-in under way, as the callback takes it back. */
export interface OidcFlow {
  providerId: string;
  nonce: string;
  codeVerifier: string;
  bindingHash: string;
  returnTo: string;
  expiresAt: Date;
}

/** Sign-in flows, handoffs and identities: the gateway's single sign-on tables. */
@Injectable()
export class OidcRepository {
  constructor(private readonly ds: Database) {}

  /**
   * Records a flow unless its address (`addressHash`) already has `maxPerAddress` flows under way: then null and
   * how many seconds until its oldest one expires. Up to {@link SWEEP_BATCH} flows and handoffs expired for a minute
   * are deleted on the way. Concurrent starts of one address may each see room and overshoot the cap by as many as
   * run at once (the per-minute rate limit before this bounds them).
   */
  async startFlow(
    stateHash: string,
    flow: OidcFlow & { addressHash: string },
    maxPerAddress: number,
  ): Promise<{ started: true } | { started: false; retryAfterSecs: number }> {
    for (const table of ['oidc_flows', 'oidc_handoffs']) {
      const key = table === 'oidc_flows' ? 'state_hash' : 'handoff_hash';
      await this.ds.query(
        `DELETE FROM ${table} WHERE ${key} IN
           (SELECT ${key} FROM ${table} WHERE expires_at < now() - interval '1 minute' LIMIT ${SWEEP_BATCH})`,
      );
    }
    const inserted = await queryRows<Pick<OidcFlowsRow, 'state_hash'>>(
      this.ds,
      `INSERT INTO oidc_flows (state_hash, provider_id, nonce, code_verifier, binding_hash, return_to, expires_at,
                               address_key)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8
        WHERE (SELECT count(*) FROM oidc_flows WHERE address_key = $8 AND expires_at > now()) < $9
       RETURNING state_hash`,
      [
        stateHash,
        flow.providerId,
        flow.nonce,
        flow.codeVerifier,
        flow.bindingHash,
        flow.returnTo,
        flow.expiresAt,
        flow.addressHash,
        maxPerAddress,
      ],
    );
    if (inserted.length === 1) return { started: true };
    const [{ secs }] = await queryRows<{ secs: number | null }>(
      this.ds,
      `SELECT ceil(extract(epoch FROM min(expires_at) - now()))::int AS secs
         FROM oidc_flows WHERE address_key = $1 AND expires_at > now()`,
      [flow.addressHash],
    );
    return { started: false, retryAfterSecs: Math.max(1, secs ?? 1) };
  }

  /** Takes the flow of this state (deleted: a second callback with it finds nothing), expired or not. */
  async takeFlow(stateHash: string): Promise<OidcFlow | null> {
    const [r] = await queryRows<OidcFlowsRow>(this.ds, `DELETE FROM oidc_flows WHERE state_hash = $1 RETURNING *`, [
      stateHash,
    ]);
    return r
      ? {
          providerId: r.provider_id,
          nonce: r.nonce,
          codeVerifier: r.code_verifier,
          bindingHash: r.binding_hash,
          returnTo: r.return_to,
          expiresAt: r.expires_at,
        }
      : null;
  }

  async createHandoff(h: {
    handoffHash: string;
    userId: string;
    providerId: string;
    returnTo: string;
    ttlSecs: number;
  }): Promise<void> {
    await this.ds.query(
      `INSERT INTO oidc_handoffs (handoff_hash, user_id, provider_id, return_to, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
      [h.handoffHash, h.userId, h.providerId, h.returnTo, h.ttlSecs],
    );
  }

  /** Takes a live handoff (deleted whether live or not). */
  async takeHandoff(handoffHash: string): Promise<{ userId: string; providerId: string; returnTo: string } | null> {
    const [r] = await queryRows<OidcHandoffsRow & { live: boolean }>(
      this.ds,
      `DELETE FROM oidc_handoffs WHERE handoff_hash = $1 RETURNING *, expires_at > now() AS live`,
      [handoffHash],
    );
    return r?.live ? { userId: r.user_id, providerId: r.provider_id, returnTo: r.return_to } : null;
  }

  async identityUser(providerId: string, subject: string): Promise<string | null> {
    const [r] = await queryRows<Pick<UserIdentitiesRow, 'user_id'>>(
      this.ds,
      `SELECT user_id FROM user_identities WHERE provider_id = $1 AND subject = $2`,
      [providerId, subject],
    );
    return r?.user_id ?? null;
  }

  /**
   * Binds (provider, subject) to the account, or records this sign-in on the existing binding: the e-mail
   * and the groups the claim named. False when the identity is bound to another account.
   */
  async recordIdentity(i: {
    providerId: string;
    subject: string;
    userId: string;
    email: string | null;
    groups: string[];
  }): Promise<boolean> {
    const rows = await queryRows<Pick<UserIdentitiesRow, 'user_id'>>(
      this.ds,
      `INSERT INTO user_identities (provider_id, subject, user_id, email, oidc_groups)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (provider_id, subject) DO UPDATE
         SET email = EXCLUDED.email, oidc_groups = EXCLUDED.oidc_groups, last_login_at = now()
         WHERE user_identities.user_id = EXCLUDED.user_id
       RETURNING user_id`,
      [i.providerId, i.subject, i.userId, i.email, i.groups],
    );
    return rows.length === 1;
  }
}
