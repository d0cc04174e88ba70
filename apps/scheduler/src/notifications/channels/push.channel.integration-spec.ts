import { createECDH, createPublicKey, randomBytes, verify } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import * as ece from 'http_ece';
import { generateVAPIDKeys } from 'web-push';
import { readPushMessage } from '@skald/contracts/push-message';
import { AddressPolicy } from '@skald/service-kit';
import { vapidKeysOf } from '../vapid';
import { OutgoingNotification } from './notification-channel';
import { ActionTokenPort, MintResult, PushChannel } from './push.channel';

const notification = (over: Partial<OutgoingNotification> = {}): OutgoingNotification => ({
  deliveryId: 'dlv_1',
  kind: 'approval_requested',
  userId: '00000000-0000-4000-8000-000000000001',
  summary: 'Approval needed: execute_cmd rm -rf build',
  link: 'http://skald.test/#inbox',
  refs: { session_id: 's1', tool_call_id: 'call_1', request_id: 'req_1', tool_name: 'execute_cmd' },
  createdAt: new Date('2026-01-01T00:00:00Z'),
  ...over,
});

/** A browser's side of a subscription: its P-256 key pair and auth secret. */
function browserKeys() {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, p256dh: ecdh.getPublicKey().toString('base64url'), authText: auth.toString('base64url') };
}

interface Received {
  headers: IncomingMessage['headers'];
  body: Buffer;
  url: string;
}

/** Verifies a VAPID JWT (ES256) with the uncompressed public key `k`; answers its claims. */
function verifyVapid(jwt: string, k: string): Record<string, unknown> {
  const [header, claims, sig] = jwt.split('.');
  const point = Buffer.from(k, 'base64url');
  const key = createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  });
  const ok = verify(
    'sha256',
    Buffer.from(`${header}.${claims}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(sig, 'base64url'),
  );
  if (!ok) throw new Error('VAPID signature does not verify');
  expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toMatchObject({ alg: 'ES256', typ: 'JWT' });
  return JSON.parse(Buffer.from(claims, 'base64url').toString()) as Record<string, unknown>;
}

describe('push channel against a local push endpoint', () => {
  let server: Server;
  let base = '';
  const received: Received[] = [];
  let answer: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.writeHead(201).end();
  const generated = generateVAPIDKeys();
  const vapid = vapidKeysOf(generated.privateKey);
  const minted: string[] = [];
  let mintAnswer: () => Promise<MintResult> = async () => ({ kind: 'minted', token: 'tok_abc-123' });
  const tokens: ActionTokenPort = {
    mint: async (requestId) => {
      minted.push(requestId);
      return mintAnswer();
    },
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks), url: req.url ?? '' });
        answer(req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://localhost:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));
  beforeEach(() => {
    received.length = 0;
    minted.length = 0;
    answer = (_q, res) => res.writeHead(201).end();
    mintAnswer = async () => ({ kind: 'minted', token: 'tok_abc-123' });
  });

  const channel = (allow: string[] = ['localhost']) =>
    new PushChannel({
      vapid,
      subject: 'mailto:ops@skald.test',
      ttlS: 600,
      policy: new AddressPolicy(allow, 'SKALD_WEBHOOK_ALLOW_HOSTS'),
      timeoutMs: 2_000,
      tokens,
    });
  const target = (keys: ReturnType<typeof browserKeys>, endpoint = `${base}/push/sub-1`) => ({
    channel: 'push' as const,
    subscriptionId: 'sub-1',
    endpoint,
    p256dh: keys.p256dh,
    auth: keys.authText,
  });

  it('derives the public key web-push generated with the private key', () => {
    expect(vapid.publicKey).toBe(generated.publicKey);
  });

  it('delivers a payload only the subscription can decrypt (aes128gcm), signed with the VAPID key', async () => {
    const keys = browserKeys();
    const result = await channel().attempt(notification(), target(keys), new AbortController().signal);
    expect(result).toEqual({ kind: 'delivered', responseCode: 201 });
    expect(received).toHaveLength(1);
    const r = received[0];
    expect(r.url).toBe('/push/sub-1');
    expect(r.headers['content-encoding']).toBe('aes128gcm');
    expect(r.headers.ttl).toBe('600');
    expect(r.headers.urgency).toBe('high');
    // the body is ciphertext: the summary is not in it
    expect(r.body.includes(Buffer.from('rm -rf build'))).toBe(false);
    const plain = ece.decrypt(r.body, { version: 'aes128gcm', privateKey: keys.ecdh, authSecret: keys.auth });
    const message = readPushMessage(JSON.parse(plain.toString('utf8')));
    expect(message).toEqual({
      kind: 'approval',
      title: 'Approval needed',
      body: 'Approval needed: execute_cmd rm -rf build',
      url: '/#inbox',
      tag: 'skald-approval_requested-req_1',
      action_token: 'tok_abc-123',
    });
    expect(minted).toEqual(['req_1']);
    // someone else's keys cannot read it
    const other = browserKeys();
    expect(() =>
      ece.decrypt(r.body, { version: 'aes128gcm', privateKey: other.ecdh, authSecret: other.auth }),
    ).toThrow();
    // VAPID (RFC 8292): `vapid t=<JWT>, k=<public key>`; the JWT verifies with the deployment's public key
    const auth = String(r.headers.authorization);
    const m = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(auth);
    expect(m).not.toBeNull();
    const [, jwt, k] = m!;
    expect(k).toBe(vapid.publicKey);
    const claims = verifyVapid(jwt, k);
    expect(claims.aud).toBe(new URL(base).origin);
    expect(claims.sub).toBe('mailto:ops@skald.test');
    const exp = Number(claims.exp) * 1000;
    expect(exp).toBeGreaterThan(Date.now());
    expect(exp).toBeLessThanOrEqual(Date.now() + 24 * 3600_000);
    // a key that is not the deployment's does not verify it
    const stranger = createECDH('prime256v1');
    stranger.generateKeys();
    expect(() => verifyVapid(jwt, stranger.getPublicKey().toString('base64url'))).toThrow();
  });

  it('pushes a finished job without a token, at normal urgency', async () => {
    const keys = browserKeys();
    const n = notification({ kind: 'job_finished', link: 'http://skald.test/#cron', refs: { run_id: 'run_9' } });
    expect(await channel().attempt(n, target(keys), new AbortController().signal)).toMatchObject({
      kind: 'delivered',
    });
    const r = received[0];
    expect(r.headers.urgency).toBe('normal');
    const plain = ece.decrypt(r.body, { version: 'aes128gcm', privateKey: keys.ecdh, authSecret: keys.auth });
    const message = readPushMessage(JSON.parse(plain.toString('utf8')));
    expect(message).toMatchObject({ kind: 'job', url: '/#cron', tag: 'skald-job_finished-run_9' });
    expect(message).not.toHaveProperty('action_token');
    expect(minted).toEqual([]);
  });

  it('says the subscription is gone on 404 and 410; other failures are retried', async () => {
    const keys = browserKeys();
    for (const status of [404, 410]) {
      answer = (_q, res) => res.writeHead(status).end();
      expect(await channel().attempt(notification(), target(keys), new AbortController().signal)).toMatchObject({
        kind: 'permanent',
        responseCode: status,
        targetGone: true,
      });
    }
    for (const status of [429, 500, 503, 400]) {
      answer = (_q, res) => res.writeHead(status).end();
      expect(await channel().attempt(notification(), target(keys), new AbortController().signal)).toMatchObject({
        kind: 'transient',
        responseCode: status,
      });
    }
    answer = (_q, res) => res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
    expect(await channel().attempt(notification(), target(keys), new AbortController().signal)).toMatchObject({
      kind: 'permanent',
      responseCode: 302,
    });
  });

  it('sends nothing for an approval that is no longer pending; retries when no token could be minted', async () => {
    const keys = browserKeys();
    mintAnswer = async () => ({ kind: 'gone', reason: 'the request was already approved' });
    expect(await channel().attempt(notification(), target(keys), new AbortController().signal)).toEqual({
      kind: 'permanent',
      error: 'the request was already approved',
    });
    mintAnswer = () => Promise.reject(new Error('no responders'));
    expect(await channel().attempt(notification(), target(keys), new AbortController().signal)).toMatchObject({
      kind: 'transient',
    });
    expect(received).toHaveLength(0);
  });

  it('refuses plain http outside the allow-list and private addresses at delivery, sending nothing', async () => {
    const keys = browserKeys();
    const guarded = channel([]);
    const cases = [
      `${base}/push/sub-1`,
      base.replace('localhost', '127.0.0.1') + '/push',
      'https://127.0.0.1:1/push',
      'https://[::1]:1/push',
      'https://169.254.169.254/latest',
      'https://localhost:1/x',
      'ftp://push.example/x',
      'https://user:pw@push.example/x',
    ];
    for (const endpoint of cases) {
      const result = await guarded.attempt(notification(), target(keys, endpoint), new AbortController().signal);
      expect({ endpoint, kind: result.kind }).toEqual({ endpoint, kind: 'permanent' });
    }
    expect(received).toHaveLength(0);
    expect(minted).toEqual([]);
  });
});
