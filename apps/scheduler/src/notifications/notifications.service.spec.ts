import type { Actor } from '@skald/contracts';
import { randomBytes } from 'node:crypto';
import { BlockedAddressError, SecretBox, type AddressPolicy } from '@skald/service-kit';
import type { NotificationsRepository, WebhookView } from './notifications.repository';
import { MAX_WEBHOOKS_PER_USER, NotificationsService } from './notifications.service';
import { webhookBinding, WebhookSecrets } from './webhook-secrets';

const BOX = SecretBox.fromConfig(randomBytes(32).toString('base64')) as SecretBox;

const USER: Actor = { userId: '00000000-0000-4000-8000-000000000001', role: 'user' };
const ADMIN: Actor = { userId: '00000000-0000-4000-8000-000000000002', role: 'admin' };

const view = (over: Partial<WebhookView> = {}): WebhookView =>
  ({
    id: 'w1',
    url: 'https://hooks.example/skald',
    scope: 'user',
    kinds: null,
    enabled: true,
    consecutive_failures: 0,
    disabled_reason: null,
    created_at: new Date('2026-12-07T00:00:00Z'),
    ...over,
  }) as WebhookView;

function build(o: { count?: number; blocked?: boolean; unresolved?: boolean; noKey?: boolean } = {}) {
  const repo = {
    countWebhooks: jest.fn(async () => o.count ?? 0),
    createWebhook: jest.fn(async (_owner: string, id: string, input: { url: string; scope: 'user' | 'admin' }) =>
      view({ id, url: input.url, scope: input.scope }),
    ),
    deleteWebhook: jest.fn(async (_owner: string, id: string) => id === 'w1'),
    deliveries: jest.fn(async (_owner: string, id: string) => (id === 'w1' ? [] : null)),
  };
  const policy = {
    checkUrl: jest.fn(async (url: URL) => {
      if (o.blocked) throw new BlockedAddressError(url.hostname, '10.0.0.7', 'SKALD_WEBHOOK_ALLOW_HOSTS');
      if (o.unresolved) throw new Error('getaddrinfo ENOTFOUND');
    }),
  };
  const sut = new NotificationsService(
    repo as unknown as NotificationsRepository,
    policy as unknown as AddressPolicy,
    new WebhookSecrets(o.noKey ? null : BOX),
  );
  return { sut, repo, policy };
}

describe('NotificationsService', () => {
  it('creates a webhook after checking its target, and shows the secret once', async () => {
    const { sut, repo, policy } = build();
    const made = await sut.createWebhook(USER, { url: 'https://hooks.example/skald', scope: 'user' });
    expect(policy.checkUrl).toHaveBeenCalledWith(new URL('https://hooks.example/skald'));
    expect(made.secret).toMatch(/^whsec_/);
    expect(made.webhook).toMatchObject({ url: 'https://hooks.example/skald', scope: 'user', enabled: true });
    expect(JSON.stringify(made.webhook)).not.toContain(made.secret);
    // Stored sealed, bound to the webhook's id: the clear secret never reaches the repository.
    const [owner, id, , sealed] = repo.createWebhook.mock.calls[0] as unknown as [string, string, unknown, string];
    expect(owner).toBe(USER.userId);
    expect(id).toBe(made.webhook.id);
    expect(JSON.stringify(repo.createWebhook.mock.calls)).not.toContain(made.secret.slice('whsec_'.length));
    expect(BOX.open(sealed, webhookBinding(id))).toBe(made.secret);
    expect(() => BOX.open(sealed, webhookBinding('another'))).toThrow();
  });

  it('without SKALD_SECRETS_KEY no webhook is added (its secret would be stored in clear)', async () => {
    const { sut, repo } = build({ noKey: true });
    const made = sut.createWebhook(USER, { url: 'https://hooks.example/skald', scope: 'user' });
    await expect(made).rejects.toMatchObject({ body: { code: 'invalid_input' } });
    await expect(made).rejects.toThrow('the operator has not configured SKALD_SECRETS_KEY');
    expect(repo.createWebhook).not.toHaveBeenCalled();
  });

  it('refuses a private target, naming the url, and stores nothing', async () => {
    const { sut, repo } = build({ blocked: true });
    await expect(sut.createWebhook(USER, { url: 'https://internal.example/', scope: 'user' })).rejects.toMatchObject({
      body: {
        code: 'invalid_input',
        field: 'url',
      },
    });
    expect(repo.createWebhook).not.toHaveBeenCalled();
  });

  it('a host that does not resolve is named', async () => {
    const { sut } = build({ unresolved: true });
    const made = sut.createWebhook(USER, { url: 'https://nowhere.example/', scope: 'user' });
    await expect(made).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'url' } });
    await expect(made).rejects.toThrow('nowhere.example');
  });

  it('an admin webhook is for admins; kinds are for admin webhooks', async () => {
    const { sut, repo } = build();
    await expect(sut.createWebhook(USER, { url: 'https://a.example/', scope: 'admin' })).rejects.toMatchObject({
      body: {
        code: 'forbidden',
        field: 'scope',
      },
    });
    await expect(
      sut.createWebhook(USER, { url: 'https://a.example/', scope: 'user', kinds: ['approval_requested'] }),
    ).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'kinds' } });
    await expect(
      sut.createWebhook(ADMIN, { url: 'https://a.example/', scope: 'admin', kinds: ['approval_requested'] }),
    ).resolves.toMatchObject({ webhook: { scope: 'admin' } });
    expect(repo.createWebhook).toHaveBeenCalledTimes(1);
  });

  it(`refuses an account's webhook past ${MAX_WEBHOOKS_PER_USER}`, async () => {
    const { sut, repo } = build({ count: MAX_WEBHOOKS_PER_USER });
    const made = sut.createWebhook(USER, { url: 'https://a.example/', scope: 'user' });
    await expect(made).rejects.toMatchObject({ body: { code: 'invalid_input', field: 'url' } });
    await expect(made).rejects.toThrow(`at most ${MAX_WEBHOOKS_PER_USER}`);
    expect(repo.createWebhook).not.toHaveBeenCalled();
  });

  it("another user's webhook (or none) is not found, for deleting and for its log", async () => {
    const { sut, repo } = build();
    await expect(sut.deleteWebhook(USER, 'w2')).rejects.toMatchObject({ body: { code: 'not_found' } });
    await expect(sut.deliveries(USER, 'w2')).rejects.toMatchObject({ body: { code: 'not_found' } });
    await expect(sut.deleteWebhook(USER, 'w1')).resolves.toEqual({ deleted: true });
    await expect(sut.deliveries(USER, 'w1')).resolves.toEqual({ items: [] });
    expect(repo.deleteWebhook).toHaveBeenCalledWith(USER.userId, 'w2');
  });
});
