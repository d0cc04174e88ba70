import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { generateWebhookSecret, signWebhook, SIGNATURE_TOLERANCE_S, verifyWebhook } from './webhook-signature';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

describe('webhook signatures (Standard Webhooks)', () => {
  const secret = generateWebhookSecret();
  const now = 1_800_000_000;

  it('a fresh secret is whsec_ and 32 random bytes, never the same twice', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(generateWebhookSecret()).not.toBe(secret);
  });

  it('the standardwebhooks package verifies what we sign, for any body (differential, generated)', () => {
    console.log(`webhook signature property seed: ${SEED}`);
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 2000 }), fc.uuid(), (body, id) => {
        const ts = Math.floor(Date.now() / 1000);
        const headers = signWebhook(secret, id, ts, body);
        expect(verifyWebhook(secret, headers, body, ts)).toBe(true);
        // The reference implementation parses JSON; give it a JSON body that carries the string.
        const json = JSON.stringify({ body });
        expect(new Webhook(secret).verify(json, { ...signWebhook(secret, id, ts, json) })).toEqual({ body });
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('refuses any change of body, id, timestamp or secret, and an old or future timestamp', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 500 }),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 5 }),
        (body, extra) => {
          const h = signWebhook(secret, 'msg_1', now, body);
          expect(verifyWebhook(secret, h, body + extra, now)).toBe(false);
          expect(verifyWebhook(secret, { ...h, 'webhook-id': 'msg_2' }, body, now)).toBe(false);
          expect(verifyWebhook(secret, { ...h, 'webhook-timestamp': String(now + 1) }, body, now)).toBe(false);
          expect(verifyWebhook(generateWebhookSecret(), h, body, now)).toBe(false);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
    const h = signWebhook(secret, 'msg_1', now, '{}');
    expect(verifyWebhook(secret, h, '{}', now + SIGNATURE_TOLERANCE_S)).toBe(true);
    expect(verifyWebhook(secret, h, '{}', now + SIGNATURE_TOLERANCE_S + 1)).toBe(false);
    expect(verifyWebhook(secret, h, '{}', now - SIGNATURE_TOLERANCE_S - 1)).toBe(false);
    expect(verifyWebhook(secret, { ...h, 'webhook-signature': 'v1,' }, '{}', now)).toBe(false);
    expect(verifyWebhook(secret, { ...h, 'webhook-signature': undefined }, '{}', now)).toBe(false);
  });

  it('refuses a secret without its prefix rather than signing with the wrong key', () => {
    expect(() => signWebhook('not-a-secret', 'msg_1', now, '{}')).toThrow(/whsec_/);
  });
});
