import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

/**
 * The secrets a backup needs to be read (SKALD_SECRETS_KEY opens the sealed MCP credentials), encrypted
 * with a passphrase: scrypt (N = 2^15, r = 8, p = 1) derives an AES-256-GCM key; the header is bound as
 * associated data, so a changed cost or salt does not open either. node:crypto only.
 */
export interface SealedSecrets {
  format: 'skald-sealed-secrets';
  version: 1;
  kdf: { name: 'scrypt'; N: number; r: number; p: number; salt: string };
  iv: string;
  tag: string;
  data: string;
}

/** scrypt's cost: 32 MiB of memory (128 · N · r), about 0.1 s. */
const COST = { N: 2 ** 15, r: 8, p: 1 };
/** The fewest characters a passphrase may have. */
export const MIN_PASSPHRASE = 16;

function keyOf(passphrase: string, kdf: SealedSecrets['kdf']): Buffer {
  return scryptSync(passphrase, Buffer.from(kdf.salt, 'base64'), 32, {
    N: kdf.N,
    r: kdf.r,
    p: kdf.p,
    maxmem: 256 * kdf.N * kdf.r,
  });
}

function aad(s: Pick<SealedSecrets, 'format' | 'version' | 'kdf'>): Buffer {
  return Buffer.from(JSON.stringify([s.format, s.version, s.kdf]));
}

export function sealSecrets(secrets: Record<string, string>, passphrase: string): SealedSecrets {
  if (passphrase.length < MIN_PASSPHRASE)
    throw new Error(`the backup passphrase must have at least ${MIN_PASSPHRASE} characters`);
  const head = {
    format: 'skald-sealed-secrets' as const,
    version: 1 as const,
    kdf: { name: 'scrypt' as const, ...COST, salt: randomBytes(16).toString('base64') },
  };
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(passphrase, head.kdf), iv);
  cipher.setAAD(aad(head));
  const data = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
  return {
    ...head,
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
}

export function openSecrets(sealed: unknown, passphrase: string): Record<string, string> {
  const s = sealed as Partial<SealedSecrets> | null;
  if (s?.format !== 'skald-sealed-secrets' || s.version !== 1 || s.kdf?.name !== 'scrypt' || !s.iv || !s.tag || !s.data)
    throw new Error("the archive's secrets are not sealed secrets of version 1");
  // scrypt's parameters come from the file: bounded, so a crafted archive cannot ask for gigabytes.
  if (!(s.kdf.N <= 2 ** 20 && s.kdf.r <= 16 && s.kdf.p <= 4))
    throw new Error("the archive's secrets ask for a scrypt cost above N = 2^20, r = 16, p = 4");
  const decipher = createDecipheriv('aes-256-gcm', keyOf(passphrase, s.kdf), Buffer.from(s.iv, 'base64'));
  decipher.setAAD(aad(s as SealedSecrets));
  decipher.setAuthTag(Buffer.from(s.tag, 'base64'));
  let plain: Buffer;
  try {
    plain = Buffer.concat([decipher.update(Buffer.from(s.data, 'base64')), decipher.final()]);
  } catch {
    throw new Error(
      "the backup passphrase does not open the archive's secrets (wrong passphrase, or a damaged archive)",
    );
  }
  return JSON.parse(plain.toString('utf8')) as Record<string, string>;
}
