import type { IncomingMessage, ServerResponse } from 'node:http';
import fc from 'fast-check';
import { simpleParser } from 'mailparser';
import { Webhook } from 'standardwebhooks';
import { WebhookEventBody } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import { LocalSmtpServer, LocalWebhookReceiver } from '@skald/testing/local-receivers';
import { generateWebhookSecret } from '../webhook-signature';
import { EmailChannel } from './email.channel';
import { OutgoingNotification } from './notification-channel';
import { WebhookChannel } from './webhook.channel';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const notification = (over: Partial<OutgoingNotification> = {}): OutgoingNotification => ({
  deliveryId: 'dlv_1',
  kind: 'approval_requested',
  userId: '00000000-0000-4000-8000-000000000001',
  summary: 'Approval needed: execute_cmd <rm -rf build>',
  link: 'http://skald.test/#inbox',
  refs: { session_id: 's1', tool_call_id: 'call_1', tool_name: 'execute_cmd' },
  createdAt: new Date('2026-01-01T00:00:00Z'),
  ...over,
});

describe('webhook channel against a local receiver', () => {
  let receiver: LocalWebhookReceiver;
  let base = '';
  const answer = (fn: (req: IncomingMessage, res: ServerResponse) => void) => receiver.answer(null, fn);

  beforeAll(async () => {
    receiver = await LocalWebhookReceiver.start();
    base = `http://localhost:${receiver.port}`;
  });
  afterAll(() => receiver.close());
  beforeEach(() => receiver.reset());

  // The receiver is on loopback: the test allow-lists `localhost` by name, as an operator would
  // (SKALD_WEBHOOK_ALLOW_HOSTS); nothing else is allowed.
  const allowed = new WebhookChannel({
    policy: new AddressPolicy(['localhost'], 'SKALD_WEBHOOK_ALLOW_HOSTS'),
    timeoutMs: 2_000,
    now: () => new Date(),
  });
  const guarded = new WebhookChannel({
    policy: new AddressPolicy([], 'SKALD_WEBHOOK_ALLOW_HOSTS'),
    timeoutMs: 2_000,
    now: () => new Date(),
  });

  it('posts a body the receiver verifies with the secret (standardwebhooks), naming the session and the call', async () => {
    const secret = generateWebhookSecret();
    const result = await allowed.attempt(
      notification(),
      { channel: 'webhook', webhookId: 'w1', url: `${base}/hook`, secret },
      new AbortController().signal,
    );
    expect(result).toEqual({ kind: 'delivered', responseCode: 204 });
    expect(receiver.hits).toHaveLength(1);
    const { headers, body } = receiver.hits[0];
    const verified = WebhookEventBody.parse(
      new Webhook(secret).verify(body, {
        'webhook-id': String(headers['webhook-id']),
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': String(headers['webhook-signature']),
      }),
    );
    expect(verified).toMatchObject({
      id: 'dlv_1',
      kind: 'approval_requested',
      refs: { session_id: 's1', tool_call_id: 'call_1' },
    });
    expect(headers['webhook-id']).toBe('dlv_1');
    expect(body).not.toContain(secret);
    expect(() =>
      new Webhook(generateWebhookSecret()).verify(body, {
        'webhook-id': String(headers['webhook-id']),
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': String(headers['webhook-signature']),
      }),
    ).toThrow();
  });

  it('a 5xx is worth retrying; a 410 and a redirect are not (and the redirect is not followed)', async () => {
    const target = {
      channel: 'webhook' as const,
      webhookId: 'w1',
      url: `${base}/hook`,
      secret: generateWebhookSecret(),
    };
    answer((_q, res) => res.writeHead(503).end('busy'));
    expect(await allowed.attempt(notification(), target, new AbortController().signal)).toMatchObject({
      kind: 'transient',
      responseCode: 503,
    });
    answer((_q, res) => res.writeHead(410).end());
    expect(await allowed.attempt(notification(), target, new AbortController().signal)).toMatchObject({
      kind: 'permanent',
      responseCode: 410,
    });
    answer((req, res) =>
      req.url === '/hook' ? res.writeHead(302, { location: `${base}/elsewhere` }).end() : res.writeHead(204).end(),
    );
    expect(await allowed.attempt(notification(), target, new AbortController().signal)).toMatchObject({
      kind: 'permanent',
      responseCode: 302,
    });
    expect(receiver.hits.map((r) => r.body.length > 0)).toEqual([true, true, true]);
  });

  it('a receiver that does not answer in time fails the attempt, and it may be retried', async () => {
    answer(() => undefined);
    const slow = new WebhookChannel({
      policy: new AddressPolicy(['localhost'], 'SKALD_WEBHOOK_ALLOW_HOSTS'),
      timeoutMs: 200,
      now: () => new Date(),
    });
    const t0 = Date.now();
    const r = await slow.attempt(
      notification(),
      { channel: 'webhook', webhookId: 'w1', url: `${base}/hook`, secret: generateWebhookSecret() },
      new AbortController().signal,
    );
    expect(r.kind).toBe('transient');
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('refuses loopback, private and link-local targets at delivery, also by a name that resolves there', async () => {
    const secret = generateWebhookSecret();
    const port = receiver.port;
    for (const url of [`${base}/hook`, `http://127.0.0.1:${port}/hook`, `http://[::ffff:127.0.0.1]:${port}/hook`]) {
      const r = await guarded.attempt(
        notification(),
        { channel: 'webhook', webhookId: 'w', url, secret },
        new AbortController().signal,
      );
      expect(r.kind).toBe('permanent');
      expect(r.kind === 'delivered' ? '' : r.error).toContain('SKALD_WEBHOOK_ALLOW_HOSTS');
    }
    expect(receiver.hits).toHaveLength(0);
  });

  it('refuses every generated private-range address literal without sending anything', async () => {
    console.log(`webhook private-range property seed: ${SEED}`);
    const octet = fc.integer({ min: 0, max: 255 });
    const v4 = fc.oneof(
      fc.tuple(octet, octet, octet).map(([a, b, c]) => `10.${a}.${b}.${c}`),
      fc.tuple(octet, octet).map(([a, b]) => `169.254.${a}.${b}`),
      fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([a, b, c]) => `172.${a}.${b}.${c}`),
      fc.tuple(octet, octet).map(([a, b]) => `192.168.${a}.${b}`),
      fc.tuple(octet, octet, octet).map(([a, b, c]) => `127.${a}.${b}.${c}`),
    );
    const host = fc.oneof(
      v4,
      v4.map((a) => `[::ffff:${a}]`),
      fc.integer({ min: 0, max: 0xffff }).map((n) => `[fd00::${n.toString(16)}]`),
      fc.integer({ min: 0, max: 0xffff }).map((n) => `[fe80::${n.toString(16)}]`),
      fc.constant('[::1]'),
    );
    await fc.assert(
      fc.asyncProperty(host, async (h) => {
        const r = await guarded.attempt(
          notification(),
          { channel: 'webhook', webhookId: 'w', url: `http://${h}:9/hook`, secret: generateWebhookSecret() },
          new AbortController().signal,
        );
        expect(r.kind).toBe('permanent');
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe('e-mail channel against a local SMTP server', () => {
  let smtp: LocalSmtpServer;

  beforeAll(async () => {
    smtp = await LocalSmtpServer.start();
  });
  afterAll(() => smtp.close());
  beforeEach(() => smtp.reset());

  it('sends a plain-text and an HTML body with the link, escaped, to the account address', async () => {
    const channel = new EmailChannel({
      smtpUrl: smtp.url,
      from: 'Skald <skald@example.test>',
      timeoutMs: 5_000,
    });
    try {
      const r = await channel.attempt(
        notification(),
        { channel: 'email', address: 'ada@example.test' },
        new AbortController().signal,
      );
      expect(r).toEqual({ kind: 'delivered' });
      expect(smtp.mails).toHaveLength(1);
      expect(smtp.mails[0].to).toEqual(['ada@example.test']);
      const parsed = await simpleParser(smtp.mails[0].raw);
      expect(parsed.subject).toBe('[Skald] Approval needed: Approval needed: execute_cmd <rm -rf build>');
      expect(parsed.text).toContain('http://skald.test/#inbox');
      expect(parsed.html).toContain('execute_cmd &lt;rm -rf build&gt;');
      expect(parsed.html).toContain('href="http://skald.test/#inbox"');
      expect(parsed.messageId).toBe('<dlv_1@skald.notifications>');
    } finally {
      channel.close();
    }
  });

  it('a 5xx refusal is final, a 4xx one may be retried, and without SMTP the channel is off', async () => {
    const channel = new EmailChannel({
      smtpUrl: smtp.url,
      from: 'skald@example.test',
      timeoutMs: 5_000,
    });
    try {
      smtp.refuse = 550;
      expect(
        await channel.attempt(
          notification(),
          { channel: 'email', address: 'x@example.test' },
          new AbortController().signal,
        ),
      ).toMatchObject({ kind: 'permanent', responseCode: 550 });
      smtp.refuse = 451;
      expect(
        await channel.attempt(
          notification(),
          { channel: 'email', address: 'x@example.test' },
          new AbortController().signal,
        ),
      ).toMatchObject({ kind: 'transient', responseCode: 451 });
    } finally {
      channel.close();
    }
    const off = new EmailChannel({ smtpUrl: undefined, from: 'skald@example.test', timeoutMs: 5_000 });
    expect(off.enabled).toBe(false);
  });
});
