import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures in the Standard Webhooks scheme (the one Svix and others use, verifiable with
 * the `standardwebhooks` packages): headers `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed by the secret
 * after its `whsec_` prefix, base64-decoded. Binding the id and the timestamp into the signed text
 * lets a receiver refuse a replay.
 */

const PREFIX = 'whsec_';
/** A receiver refuses a timestamp further than this from its clock. */
export const SIGNATURE_TOLERANCE_S = 5 * 60;

/** A new secret (shown to the owner once): `whsec_` and 32 random bytes in base64. */
export function generateWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signWebhook(secret: string, id: string, timestampS: number, body: string): SignedHeaders {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampS}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampS), 'webhook-signature': `v1,${mac}` };
}

/**
 * A receiver's check (the docs show it; the tests use it next to the `standardwebhooks` package):
 * true when one of the space-separated `v1,` signatures matches and the timestamp is recent.
 */
export function verifyWebhook(
  secret: string,
  headers: Partial<Record<keyof SignedHeaders, string>>,
  body: string,
  nowS: number,
): boolean {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs || !/^\d{1,12}$/.test(ts)) return false;
  if (Math.abs(nowS - Number(ts)) > SIGNATURE_TOLERANCE_S) return false;
  const expected = Buffer.from(signWebhook(secret, id, Number(ts), body)['webhook-signature'].slice(3), 'base64');
  return sigs.split(' ').some((entry) => {
    if (!entry.startsWith('v1,')) return false;
    const given = Buffer.from(entry.slice(3), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
