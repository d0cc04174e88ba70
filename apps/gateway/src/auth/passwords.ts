import { randomBytes, scrypt as scryptCb, timingSafeEqual, createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { Algorithm, hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';

const scrypt = promisify(scryptCb) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

/**
 * Argon2id at the OWASP Password Storage Cheat Sheet's first recommendation: 19 MiB of memory,
 * 2 iterations, 1 lane. A stored hash weaker than this is rehashed at its owner's next login.
 */
export const ARGON2_PARAMS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
/** The most expensive legacy scrypt hash we agree to check (a bound on what a stored row can cost). */
const SCRYPT_MAX_N = 1 << 20;

export interface PasswordCheck {
  ok: boolean;
  /** The hash is of an older scheme or weaker parameters: store a fresh `hashPassword` of it. */
  needsRehash: boolean;
}

/** A PHC string `$argon2id$v=19$m=…,t=…,p=…$salt$hash`. */
export function hashPassword(password: string): Promise<string> {
  return argon2Hash(password, { algorithm: Algorithm.Argon2id, ...ARGON2_PARAMS });
}

/**
 * Checks a password against a stored hash: argon2id (PHC string) or the legacy
 * `scrypt$N$r$p$salt$hash` (base64url). Anything else, or a malformed hash, never matches.
 */
export async function verifyPassword(password: string, stored: string): Promise<PasswordCheck> {
  if (stored.startsWith('$argon2id$')) {
    const ok = await argon2Verify(stored, password).catch(() => false);
    return { ok, needsRehash: ok && weakerArgon2(stored) };
  }
  if (stored.startsWith('scrypt$')) {
    const ok = await verifyScrypt(password, stored);
    return { ok, needsRehash: ok };
  }
  return { ok: false, needsRehash: false };
}

function weakerArgon2(stored: string): boolean {
  const params = /\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(stored);
  if (!params) return true;
  const [m, t, p] = params.slice(1).map(Number);
  return m < ARGON2_PARAMS.memoryCost || t < ARGON2_PARAMS.timeCost || p < ARGON2_PARAMS.parallelism;
}

async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const [, n, r, p, salt, hash] = stored.split('$');
  const N = Number(n);
  const R = Number(r);
  const P = Number(p);
  const valid = (x: number, max: number) => Number.isInteger(x) && x >= 1 && x <= max;
  if (!salt || !hash || !valid(N, SCRYPT_MAX_N) || (N & (N - 1)) !== 0 || !valid(R, 32) || !valid(P, 16)) return false;
  const expected = Buffer.from(hash, 'base64url');
  if (expected.length < 16 || expected.length > 64) return false;
  try {
    const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
      N,
      r: R,
      p: P,
      maxmem: 256 * N * R + 1024 * 1024,
    });
    return timingSafeEqual(actual, expected);
  } catch {
    return false;
  }
}

/** Opaque secrets (API tokens, WS tickets) are stored as their SHA-256. */
export function sha256(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}
