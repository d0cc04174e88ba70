// The part of `http_ece` (Encrypted Content-Encoding for HTTP, RFC 8188) the push tests use to read
// what the scheduler encrypted; the package ships no types.
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto';

  interface DecryptParams {
    version: 'aes128gcm';
    /** The receiving subscription's key pair. */
    privateKey: ECDH;
    /** The subscription's 16-byte auth secret. */
    authSecret: Buffer;
  }

  export function decrypt(buffer: Buffer, params: DecryptParams): Buffer;
}
