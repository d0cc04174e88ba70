import { createECDH } from 'node:crypto';

/** The deployment's VAPID key pair, both halves base64url (the form `web-push` and browsers take). */
export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

/** The public key of a VAPID private key: the uncompressed P-256 point (65 bytes), base64url. */
export function vapidKeysOf(privateKey: string): VapidKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(Buffer.from(privateKey, 'base64url'));
  return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey };
}

/** Whether `value` is base64url of a valid 32-byte P-256 private key. */
export function isVapidPrivateKey(value: string): boolean {
  if (!/^[A-Za-z0-9_-]{43}$/.test(value)) return false;
  try {
    vapidKeysOf(value);
    return true;
  } catch {
    return false;
  }
}
