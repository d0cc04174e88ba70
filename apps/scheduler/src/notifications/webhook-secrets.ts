import type { WebhooksRow } from '@skald/persistence';
import type { SecretBox } from '@skald/service-kit';

/** What a webhook's sealed secret is bound to: a value copied to another webhook's row does not open. */
export const webhookBinding = (webhookId: string): string => `webhook:${webhookId}`;

/** Webhooks one pass of `sealClear` reads, and passes at most: the bound of the start-up loop. */
const SEAL_BATCH = 100;
const SEAL_PASSES = 1_000;

/** The few methods of the repository that sealing needs. */
export interface ClearSecretsPort {
  clearSecrets(limit: number): Promise<Pick<WebhooksRow, 'id' | 'secret'>[]>;
  sealSecret(webhookId: string, clear: string, sealed: string): Promise<boolean>;
}

/** Why a webhook's secret could not be had: the delivery fails at once (retrying cannot help). */
export class WebhookSecretUnavailable extends Error {}

/**
 * Webhook signing secrets at rest: sealed with the deployment's `SKALD_SECRETS_KEY` (the tool
 * runner's MCP credentials use the same box), opened only to sign a delivery. Without a key no
 * webhook can be added (its secret would be stored in clear).
 */
export class WebhookSecrets {
  constructor(private readonly box: SecretBox | null) {}

  get configured(): boolean {
    return this.box !== null;
  }

  seal(webhookId: string, secret: string): string {
    if (!this.box) throw new WebhookSecretUnavailable('SKALD_SECRETS_KEY is not configured');
    return this.box.seal(secret, webhookBinding(webhookId));
  }

  /** The secret that signs a delivery: opened from `sealed_secret`, or a clear one not sealed yet. */
  open(row: Pick<WebhooksRow, 'id' | 'secret' | 'sealed_secret'>): string {
    if (row.sealed_secret === null) {
      if (row.secret === null) throw new WebhookSecretUnavailable('the webhook has no secret');
      return row.secret;
    }
    if (!this.box)
      throw new WebhookSecretUnavailable('its secret cannot be opened: SKALD_SECRETS_KEY is not configured');
    try {
      return this.box.open(row.sealed_secret, webhookBinding(row.id));
    } catch {
      throw new WebhookSecretUnavailable('its secret cannot be opened with the configured SKALD_SECRETS_KEY');
    }
  }

  /**
   * Seals every secret still in clear (rows written before secrets were sealed), a batch at a
   * time, at most `SEAL_PASSES` batches, and stops at a batch that sealed nothing (no progress);
   * answers how many it sealed. Without a key it seals none.
   */
  async sealClear(repo: ClearSecretsPort): Promise<number> {
    if (!this.box) return 0;
    let sealed = 0;
    for (let pass = 0; pass < SEAL_PASSES; pass++) {
      const rows = await repo.clearSecrets(SEAL_BATCH);
      let now = 0;
      for (const r of rows)
        if (r.secret !== null && (await repo.sealSecret(r.id, r.secret, this.seal(r.id, r.secret)))) now++;
      sealed += now;
      if (rows.length < SEAL_BATCH || now === 0) break;
    }
    return sealed;
  }
}
