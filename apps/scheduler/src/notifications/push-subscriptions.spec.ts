/**
 * Subscribing a browser to push, attacked: generated endpoint URLs (schemes, private and public
 * address literals, credentials, odd paths) and keys. Whatever the input, what is stored is an
 * https endpoint (or http for an allow-listed host) whose address is not loopback, private or
 * link-local, with keys of the right sizes; another user's subscription id is not found.
 * IP literals only: the address guard resolves names, and this tier touches no network.
 */
import fc from 'fast-check';
import { PushSubscriptionInput, type Actor } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import type { NotificationsRepository, PushSubscriptionView } from './notifications.repository';
import { NotificationsService } from './notifications.service';
import { WebhookSecrets } from './webhook-secrets';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const USER: Actor = { userId: '00000000-0000-4000-8000-000000000001', role: 'user' };
const P256DH = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url');
const AUTH = Buffer.alloc(16, 9).toString('base64url');

const PUBLIC_HOSTS = ['8.8.8.8', '[2001:4860:4860::8888]', '93.184.216.34'];
const PRIVATE_HOSTS = [
  '127.0.0.1',
  '127.1',
  '2130706433',
  '0x7f000001',
  '10.1.2.3',
  '172.16.0.1',
  '192.168.1.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '[::1]',
  '[::]',
  '[::ffff:127.0.0.1]',
  '[::ffff:a00:1]',
  '[fe80::1]',
  '[fd00::1]',
  '[64:ff9b::7f00:1]',
];

function build(allow: string[] = []) {
  const stored: Array<{ userId: string; endpoint: string; p256dh: string; auth: string }> = [];
  const repo = {
    ownsPushEndpoint: jest.fn(async () => false),
    countPushSubscriptions: jest.fn(async () => 0),
    upsertPushSubscription: jest.fn(async (userId: string, input: PushSubscriptionInput) => {
      stored.push({ userId, endpoint: input.endpoint, ...input.keys });
      const row: PushSubscriptionView = {
        id: 'p1',
        user_id: userId,
        endpoint: input.endpoint,
        user_agent: input.user_agent ?? '',
        created_at: new Date(0),
        last_success_at: null,
      };
      return { row, created: true };
    }),
    deletePushSubscription: jest.fn(async (userId: string, id: string) => userId === USER.userId && id === 'p1'),
  };
  const policy = new AddressPolicy(allow, 'SKALD_WEBHOOK_ALLOW_HOSTS');
  const sut = new NotificationsService(
    repo as unknown as NotificationsRepository,
    policy,
    new WebhookSecrets(null),
    'BPublicKey',
  );
  return { sut, repo, stored };
}

const endpointArb = fc
  .record({
    // weighted so that about one input in twenty is acceptable: both sides of the check are exercised
    scheme: fc.constantFrom('https', 'https', 'https', 'https', 'http', 'HTTPS', 'ftp', 'javascript', 'data', 'file'),
    userinfo: fc.constantFrom('', '', '', '', 'user@', 'user:pw@', '@'),
    host: fc.constantFrom(...PUBLIC_HOSTS, ...PUBLIC_HOSTS, ...PUBLIC_HOSTS, ...PRIVATE_HOSTS),
    port: fc.constantFrom('', ':443', ':1', ':8443'),
    path: fc.string({ maxLength: 40 }),
  })
  .map(({ scheme, userinfo, host, port, path }) => `${scheme}://${userinfo}${host}${port}/${path}`);

const keyArb = (valid: string) =>
  fc.oneof(
    { arbitrary: fc.constant(valid), weight: 6 },
    fc.string({ maxLength: 120 }),
    fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b).toString('base64url')),
    fc.constant(`${valid}=`),
    fc.constant(valid.slice(1)),
  );

function isPrivateHost(endpoint: string): boolean {
  const host = new URL(endpoint).hostname;
  return PRIVATE_HOSTS.some((h) => new URL(`https://${h}/`).hostname === host);
}

describe('push subscriptions, attacked', () => {
  it(`stores only https endpoints on public addresses with well-sized keys (seed ${SEED})`, async () => {
    const { sut, stored } = build();
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(endpointArb, keyArb(P256DH), keyArb(AUTH), async (endpoint, p256dh, auth) => {
        stored.length = 0;
        const parsed = PushSubscriptionInput.safeParse({ endpoint, keys: { p256dh, auth } });
        if (!parsed.success) return;
        await sut.subscribePush(USER, parsed.data).catch(() => undefined);
        accepted += stored.length;
        for (const s of stored) {
          const url = new URL(s.endpoint);
          expect(url.protocol).toBe('https:');
          expect(url.username + url.password).toBe('');
          expect(isPrivateHost(s.endpoint)).toBe(false);
          expect(Buffer.from(s.p256dh, 'base64url')).toHaveLength(65);
          expect(Buffer.from(s.auth, 'base64url')).toHaveLength(16);
        }
      }),
      { seed: SEED, numRuns: 600 },
    );
    // the generator reaches the accepting side too, so the checks above ran
    expect(accepted).toBeGreaterThan(0);
  });

  it('takes a browser subscription on a public https endpoint, and refuses the same path on a private host', async () => {
    const { sut, stored } = build();
    const made = await sut.subscribePush(USER, {
      endpoint: 'https://8.8.8.8/wpush/v2/abc',
      keys: { p256dh: P256DH, auth: AUTH },
      user_agent: 'Firefox on Android',
    });
    expect(made.subscription).toMatchObject({
      endpoint: 'https://8.8.8.8/wpush/v2/abc',
      user_agent: 'Firefox on Android',
    });
    expect(JSON.stringify(made)).not.toContain(AUTH);
    for (const host of PRIVATE_HOSTS)
      await expect(
        sut.subscribePush(USER, { endpoint: `https://${host}/wpush`, keys: { p256dh: P256DH, auth: AUTH } }),
      ).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'endpoint' } });
    expect(stored).toHaveLength(1);
  });

  it('plain http only for an allow-listed host', async () => {
    const { sut } = build(['127.0.0.1']);
    await expect(
      sut.subscribePush(USER, { endpoint: 'http://127.0.0.1:9/push', keys: { p256dh: P256DH, auth: AUTH } }),
    ).resolves.toMatchObject({ created: true });
    await expect(
      sut.subscribePush(USER, { endpoint: 'http://8.8.8.8/push', keys: { p256dh: P256DH, auth: AUTH } }),
    ).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'endpoint' } });
  });

  it("answers not_found for another user's subscription id", async () => {
    const { sut } = build();
    const mallory: Actor = { userId: '00000000-0000-4000-8000-000000000009', role: 'user' };
    await expect(sut.deletePushSubscription(mallory, 'p1')).rejects.toMatchObject({ body: { code: 'not_found' } });
    await expect(sut.deletePushSubscription(USER, 'p1')).resolves.toEqual({ deleted: true });
  });

  it('is unavailable while push is off', async () => {
    const repo = {} as NotificationsRepository;
    const sut = new NotificationsService(repo, new AddressPolicy([]), new WebhookSecrets(null), null);
    expect(sut.pushKey()).toEqual({ public_key: null });
    await expect(
      sut.subscribePush(USER, { endpoint: 'https://8.8.8.8/p', keys: { p256dh: P256DH, auth: AUTH } }),
    ).rejects.toMatchObject({ body: { code: 'unavailable' } });
  });
});
