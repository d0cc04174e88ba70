import { randomBytes } from 'node:crypto';
import { SecretBox } from '@skald/service-kit';
import { type ClearSecretsPort, WebhookSecrets, WebhookSecretUnavailable } from './webhook-secrets';

const box = () => SecretBox.fromConfig(randomBytes(32).toString('base64'));

describe('WebhookSecrets', () => {
  it('opens a sealed secret only for its own webhook and key; a clear one not sealed yet still signs', () => {
    const s = new WebhookSecrets(box());
    const sealed = s.seal('w1', 'whsec_abc');
    expect(sealed).not.toContain('abc');
    expect(s.open({ id: 'w1', secret: null, sealed_secret: sealed })).toBe('whsec_abc');
    // Copied onto another webhook's row, it does not open: that delivery fails, it never signs.
    expect(() => s.open({ id: 'w2', secret: null, sealed_secret: sealed })).toThrow(WebhookSecretUnavailable);
    expect(() => new WebhookSecrets(box()).open({ id: 'w1', secret: null, sealed_secret: sealed })).toThrow(
      'cannot be opened with the configured SKALD_SECRETS_KEY',
    );
    expect(() => new WebhookSecrets(null).open({ id: 'w1', secret: null, sealed_secret: sealed })).toThrow(
      'SKALD_SECRETS_KEY is not configured',
    );
    expect(s.open({ id: 'w1', secret: 'whsec_legacy', sealed_secret: null })).toBe('whsec_legacy');
    expect(() => new WebhookSecrets(null).seal('w1', 'x')).toThrow(WebhookSecretUnavailable);
  });

  it('seals every clear secret in bounded batches; without a key it seals none', async () => {
    const rows = new Map<string, string>(Array.from({ length: 250 }, (_, i) => [`w${i}`, `whsec_${i}`]));
    const sealedRows = new Map<string, string>();
    let reads = 0;
    const repo: ClearSecretsPort = {
      clearSecrets: (limit) => {
        reads++;
        return Promise.resolve([...rows].slice(0, limit).map(([id, secret]) => ({ id, secret })));
      },
      sealSecret: (id, clear, sealed) => {
        if (rows.get(id) !== clear) return Promise.resolve(false);
        rows.delete(id);
        sealedRows.set(id, sealed);
        return Promise.resolve(true);
      },
    };
    expect(await new WebhookSecrets(null).sealClear(repo)).toBe(0);
    expect(reads).toBe(0);
    const s = new WebhookSecrets(box());
    expect(await s.sealClear(repo)).toBe(250);
    expect(reads).toBe(3);
    expect(rows.size).toBe(0);
    expect(s.open({ id: 'w7', secret: null, sealed_secret: sealedRows.get('w7')! })).toBe('whsec_7');

    // A repository that never lets a row go (a poison batch): the pass that makes no progress is the last.
    let endless = 0;
    const stuck: ClearSecretsPort = {
      clearSecrets: (limit) => {
        endless++;
        return Promise.resolve(Array.from({ length: limit }, (_, i) => ({ id: `p${i}`, secret: 'whsec_p' })));
      },
      sealSecret: () => Promise.resolve(false),
    };
    expect(await s.sealClear(stuck)).toBe(0);
    expect(endless).toBe(1);
  });
});
