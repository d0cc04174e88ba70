import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Credentials at rest (MCP credentials in the tool runner, webhook signing secrets in the
 * scheduler): AES-256-GCM with the deployment's key from the environment (`SKALD_SECRETS_KEY`, 32
 * bytes as base64 or hex). A sealed value is `v1.<iv>.<tag>.<ciphertext>` (base64url); what it
 * belongs to (`boundTo`: the user, the webhook) is bound as associated data, so a value copied to
 * another row does not open.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** `null` when no key is configured: credentials cannot be stored (servers without any still work). */
  static fromConfig(raw: string | undefined): SecretBox | null {
    if (!raw) return null;
    return new SecretBox(parseKey(raw));
  }

  seal(plain: string, boundTo: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  open(sealed: string, boundTo: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

export function parseKey(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32)
    throw new Error('SKALD_SECRETS_KEY must be 32 bytes, as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)');
  return key;
}
