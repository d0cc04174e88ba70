import { randomBytes, scryptSync } from 'node:crypto';
import fc from 'fast-check';
import { Algorithm, hash as argon2Hash } from '@node-rs/argon2';
import { ARGON2_PARAMS, hashPassword, verifyPassword } from './passwords';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const legacyScrypt = (password: string, N = 16384) => {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32, { N, r: 8, p: 1 });
  return `scrypt$${N}$8$1$${salt.toString('base64url')}$${hash.toString('base64url')}`;
};

describe('password hashing', () => {
  it('hashes with argon2id at the OWASP parameters, salted, and verifies only the same password', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery', a)).toEqual({ ok: true, needsRehash: false });
    expect(await verifyPassword('correct horse batterY', a)).toEqual({ ok: false, needsRehash: false });
  });

  it('accepts a legacy scrypt hash and asks for a rehash; a wrong password asks for nothing', async () => {
    const legacy = legacyScrypt('old password');
    expect(await verifyPassword('old password', legacy)).toEqual({ ok: true, needsRehash: true });
    expect(await verifyPassword('old passworD', legacy)).toEqual({ ok: false, needsRehash: false });
  });

  it('asks to rehash argon2id hashes weaker than the current parameters', async () => {
    const weak = await argon2Hash('pw', {
      algorithm: Algorithm.Argon2id,
      memoryCost: 4096,
      timeCost: 1,
      parallelism: 1,
    });
    expect(await verifyPassword('pw', weak)).toEqual({ ok: true, needsRehash: true });
    expect(ARGON2_PARAMS.memoryCost).toBeGreaterThanOrEqual(19_456);
  });

  it('never throws and never matches on a hostile or malformed stored hash', async () => {
    console.log(`passwords property seed: ${SEED}`);
    const token = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom(
        'scrypt',
        '$argon2id',
        'argon2id',
        '',
        '0',
        '-1',
        '1e9',
        '4294967296',
        'NaN',
        '16384',
        '3',
        'AAAA',
      ),
      fc.nat().map(String),
    );
    const stored = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.array(token, { maxLength: 8 }).map((parts) => parts.join('$')),
      fc.array(token, { maxLength: 5 }).map((parts) => `scrypt$${parts.join('$')}`),
      fc.array(token, { maxLength: 5 }).map((parts) => `$argon2id$${parts.join('$')}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 64 }), stored, async (password, hash) => {
        const r = await verifyPassword(password, hash);
        expect(r.ok).toBe(false);
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('refuses scrypt parameters that would cost unbounded memory or time', async () => {
    const salt = randomBytes(16).toString('base64url');
    const hash = randomBytes(32).toString('base64url');
    for (const [n, r, p] of [
      ['4194304', '8', '1'],
      ['16384', '1000', '1'],
      ['16384', '8', '1000'],
      ['16385', '8', '1'],
      ['0', '8', '1'],
    ]) {
      const started = Date.now();
      expect(await verifyPassword('x', `scrypt$${n}$${r}$${p}$${salt}$${hash}`)).toEqual({
        ok: false,
        needsRehash: false,
      });
      expect(Date.now() - started).toBeLessThan(200);
    }
  });
});
