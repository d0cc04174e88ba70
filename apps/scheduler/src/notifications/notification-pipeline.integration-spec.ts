import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import * as ece from 'http_ece';
import { generateVAPIDKeys } from 'web-push';
import fc from 'fast-check';
import Redis from 'ioredis';
import { simpleParser } from 'mailparser';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { WebhookEventBody, type Actor, type UserStandingReply } from '@skald/contracts';
import { RemoteError } from '@skald/messaging';
import { queryRows, type NotificationDeliveriesRow, type WebhooksRow } from '@skald/persistence';
import { AddressPolicy, SecretBox } from '@skald/service-kit';
import { PrivateRedis } from '@skald/testing';
import { LocalSmtpServer, LocalWebhookReceiver } from '@skald/testing/local-receivers';
import { until } from '@skald/testing/until';
import { EmailChannel } from './channels/email.channel';
import { PushChannel } from './channels/push.channel';
import { vapidKeysOf } from './vapid';
import { WebhookChannel } from './channels/webhook.channel';
import { NotificationPipeline, PipelineOptions } from './notification-pipeline';
import { NotificationsRepository } from './notifications.repository';
import { NotificationsService } from './notifications.service';
import { WebhookSecrets } from './webhook-secrets';
import { generateWebhookSecret } from './webhook-signature';

jest.setTimeout(120_000);

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('notification pipeline (Postgres, Redis, a local receiver and SMTP server)', () => {
  let ds: DataSource;
  let redis: PrivateRedis;
  const conns: Redis[] = [];
  const pipelines: NotificationPipeline[] = [];
  let receiver: LocalWebhookReceiver;
  let base = '';
  let smtp: LocalSmtpServer;
  const emails = new Map<string, string>();
  /** Users with a socket open, as the gateways would answer `user.presence`. */
  const online = new Set<string>();
  /** Users for whom no gateway answers `user.presence` in time. */
  const presenceDown = new Set<string>();
  const notices: { userId: string; summary: string }[] = [];
  let repo: NotificationsRepository;
  const prefix = `skald-notify-it-${process.pid}-${Date.now()}`;
  const allow = new AddressPolicy(['localhost'], 'SKALD_WEBHOOK_ALLOW_HOSTS');
  const secrets = new WebhookSecrets(SecretBox.fromConfig(randomBytes(32).toString('base64')));

  const owners = {
    standing: (userId: string): Promise<UserStandingReply> =>
      Promise.resolve(
        emails.has(userId)
          ? { standing: 'active', role: 'user', email: emails.get(userId) }
          : { standing: 'deleted', role: null },
      ),
    online: (userId: string): Promise<boolean> =>
      presenceDown.has(userId) ? Promise.reject(new Error('no gateway answered')) : Promise.resolve(online.has(userId)),
  };

  const vapid = vapidKeysOf(generateVAPIDKeys().privateKey);
  const pushChannel = () =>
    new PushChannel({
      vapid,
      subject: 'mailto:ops@example.test',
      ttlS: 60,
      policy: allow,
      timeoutMs: 2_000,
      tokens: { mint: () => Promise.resolve({ kind: 'minted' as const, token: 'tok_1' }) },
    });

  function pipeline(over: Partial<PipelineOptions> = {}): NotificationPipeline {
    const p = new NotificationPipeline(
      repo,
      {
        webhook: new WebhookChannel({ policy: allow, timeoutMs: 2_000, now: () => new Date() }),
        email: new EmailChannel({
          smtpUrl: smtp.url,
          from: 'skald@example.test',
          timeoutMs: 5_000,
        }),
        push: pushChannel(),
      },
      owners,
      {
        notice: (userId, summary) => {
          notices.push({ userId, summary });
          return Promise.resolve();
        },
      },
      secrets,
      () => {
        const c = new Redis(redis.url, { maxRetriesPerRequest: null });
        conns.push(c);
        return c;
      },
      {
        prefix,
        retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 400 },
        disableAfter: 2,
        sweepMs: 60_000,
        sweepBatch: 50,
        concurrency: 4,
        publicUrl: 'http://skald.test',
        attemptLeaseMs: 10_000,
        ...over,
      },
      log,
    );
    pipelines.push(p);
    return p;
  }

  async function newUser(role: 'user' | 'admin' = 'user'): Promise<Actor> {
    const id = randomUUID();
    const email = `n-${id}@example.test`;
    await ds.query(`INSERT INTO users (id, email, password_hash, role) VALUES ($1, $2, 'x', $3)`, [id, email, role]);
    emails.set(id, email);
    return { userId: id, role };
  }

  const hitsOn = (path: string) => receiver.hitsOn(path);
  const mailsTo = (userId: string) => smtp.mailsTo(emails.get(userId)!);

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
    repo = new NotificationsRepository(ds);
    redis = await PrivateRedis.start();
    receiver = await LocalWebhookReceiver.start();
    base = `http://localhost:${receiver.port}`;
    smtp = await LocalSmtpServer.start();
  });

  afterAll(async () => {
    for (const p of pipelines) await p.stop();
    for (const c of conns) c.disconnect();
    await redis.destroy();
    await receiver.close();
    await smtp.close();
    await ds.destroy();
  });

  it('an approval reaches the user webhook signed (once, however often it is sent) and their mailbox', async () => {
    const p = pipeline();
    await p.start();
    const me = await newUser();
    const service = new NotificationsService(repo, allow, secrets);
    const path = `/hook-${me.userId}`;
    const created = await service.createWebhook(me, { url: `${base}${path}`, scope: 'user' });
    expect(created.secret).toMatch(/^whsec_/);
    const listed = await service.listWebhooks(me);
    expect(JSON.stringify(listed)).not.toContain(created.secret);

    const event = {
      userId: me.userId,
      eventKey: `human-request:${randomUUID()}`,
      kind: 'approval_requested' as const,
      summary: 'Approval needed: execute_cmd make deploy',
      refs: { session_id: randomUUID(), tool_call_id: 'call_7', tool_name: 'execute_cmd' },
    };
    const first = await p.ingest(event);
    const again = await p.ingest(event);
    expect(again).toEqual({ notification_id: first.notification_id, duplicate: true });

    await until('the webhook and the mail', () => hitsOn(path).length === 1 && mailsTo(me.userId).length > 0, 20_000);
    await sleep(500);
    expect(hitsOn(path)).toHaveLength(1);
    const hit = hitsOn(path)[0];
    const body = WebhookEventBody.parse(
      new Webhook(created.secret).verify(hit.body, {
        'webhook-id': String(hit.headers['webhook-id']),
        'webhook-timestamp': String(hit.headers['webhook-timestamp']),
        'webhook-signature': String(hit.headers['webhook-signature']),
      }),
    );
    expect(body).toMatchObject({
      kind: 'approval_requested',
      user_id: me.userId,
      link: 'http://skald.test/#inbox',
      refs: { session_id: event.refs.session_id, tool_call_id: 'call_7' },
    });
    const mail = await simpleParser(mailsTo(me.userId)[0].raw);
    expect(mail.text).toContain('execute_cmd make deploy');
    expect(mail.text).toContain('http://skald.test/#inbox');

    const log = await service.deliveries(me, created.webhook.id);
    expect(log.items).toEqual([
      expect.objectContaining({ status: 'delivered', attempts: 1, response_code: 204, last_error: null }),
    ]);
    const stranger = await newUser();
    await expect(service.deliveries(stranger, created.webhook.id)).rejects.toThrow(RemoteError);
  });

  it('retries a failing receiver with backoff, stops at the bound, logs why, and disables it after N such failures', async () => {
    const p = pipeline();
    await p.start();
    const me = await newUser();
    await repo.putSettings(me.userId, {
      channels: { webhook: ['job_finished'], email: [], push: [] },
      quiet_hours: null,
    });
    const service = new NotificationsService(repo, allow, secrets);
    const path = `/down-${me.userId}`;
    receiver.answer(path, (_req, res) => res.writeHead(503).end('down'));
    const { webhook } = await service.createWebhook(me, { url: `${base}${path}`, scope: 'user' });

    await p.ingest({
      userId: me.userId,
      eventKey: 'job-run:1',
      kind: 'job_finished',
      summary: 'Backup failed',
      refs: {},
    });
    const [failed] = await until('the delivery to fail', async () => {
      const items = (await service.deliveries(me, webhook.id)).items;
      return items[0]?.status === 'failed' ? items : null;
    });
    expect(failed).toMatchObject({ attempts: 3, response_code: 503, last_error: 'gave up after 3 attempts: HTTP 503' });
    expect(hitsOn(path)).toHaveLength(3);
    const times = hitsOn(path).map((h) => Number(h.headers['webhook-timestamp']));
    expect(times[2]).toBeGreaterThanOrEqual(times[0]);
    expect((await service.listWebhooks(me)).items[0]).toMatchObject({ enabled: true, consecutive_failures: 1 });
    expect(notices.filter((n) => n.userId === me.userId)).toHaveLength(0);

    await p.ingest({
      userId: me.userId,
      eventKey: 'job-run:2',
      kind: 'job_finished',
      summary: 'Backup failed',
      refs: {},
    });
    const [hook] = await until('the webhook to be disabled', async () => {
      const items = (await service.listWebhooks(me)).items;
      return items[0]?.enabled === false ? items : null;
    });
    expect(hook.disabled_reason).toContain('disabled after 2 failed deliveries in a row');
    const told = notices.filter((n) => n.userId === me.userId);
    expect(told).toHaveLength(1);
    expect(told[0].summary).toContain(`${base}${path} was disabled after 2 failed deliveries`);
    // A disabled webhook gets nothing more.
    await p.ingest({ userId: me.userId, eventKey: 'job-run:3', kind: 'job_finished', summary: 'x', refs: {} });
    await sleep(800);
    expect(hitsOn(path)).toHaveLength(6);
    // Kinds the settings do not route to webhooks are not sent.
    await p.ingest({ userId: me.userId, eventKey: 'q-1', kind: 'question_asked', summary: 'x', refs: {} });
    expect((await service.deliveries(me, webhook.id)).items).toHaveLength(2);
  });

  it('a notification written while no queue ran is delivered by the sweep (a lost doorbell)', async () => {
    const me = await newUser();
    const service = new NotificationsService(repo, allow, secrets);
    const path = `/later-${me.userId}`;
    await service.createWebhook(me, { url: `${base}${path}`, scope: 'user' });
    // Never started: the rows are written, no job is enqueued (a crash between commit and enqueue).
    await pipeline().ingest({
      userId: me.userId,
      eventKey: 'turn:1',
      kind: 'turn_finished',
      summary: 'Reply ready',
      refs: {},
    });
    await sleep(300);
    expect(hitsOn(path)).toHaveLength(0);
    const sweeper = pipeline({ sweepMs: 100 });
    await sweeper.start();
    await until('the swept delivery', () => hitsOn(path).length === 1, 20_000);
  });

  it('an admin webhook receives other users events of the chosen kinds; quiet hours hold the mail, not the webhook', async () => {
    const p = pipeline();
    await p.start();
    const admin = await newUser('admin');
    const user = await newUser();
    const service = new NotificationsService(repo, allow, secrets);
    const path = `/admin-${admin.userId}`;
    await expect(service.createWebhook(user, { url: `${base}/x`, scope: 'admin' })).rejects.toMatchObject({
      body: { code: 'forbidden' },
    });
    await service.createWebhook(admin, { url: `${base}${path}`, scope: 'admin', kinds: ['question_asked'] });
    const now = new Date();
    const hh = (h: number) => String((now.getUTCHours() + h + 24) % 24).padStart(2, '0');
    await repo.putSettings(user.userId, {
      channels: { webhook: [], email: ['question_asked'], push: [] },
      quiet_hours: { start: `${hh(-1)}:00`, end: `${hh(2)}:00`, time_zone: 'UTC' },
    });
    await p.ingest({
      userId: user.userId,
      eventKey: 'q-9',
      kind: 'question_asked',
      summary: 'Which branch?',
      refs: {},
    });
    await p.ingest({ userId: user.userId, eventKey: 'j-9', kind: 'job_finished', summary: 'done', refs: {} });
    await until('the admin webhook', () => hitsOn(path).length >= 1, 20_000);
    await sleep(500);
    expect(hitsOn(path).map((h) => (JSON.parse(h.body) as { kind: string; user_id: string }).user_id)).toEqual([
      user.userId,
    ]);
    expect(mailsTo(user.userId)).toHaveLength(0);
    const [held] = await queryRows<Pick<NotificationDeliveriesRow, 'status' | 'next_attempt_at'>>(
      ds,
      `SELECT d.status, d.next_attempt_at FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id
        WHERE n.user_id = $1 AND d.channel = 'email'`,
      [user.userId],
    );
    expect(held.status).toBe('pending');
    expect(held.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + 30 * 60_000);
  });

  it('refuses a private-range target at creation: literals and names that resolve there (generated)', async () => {
    const guarded = new NotificationsService(repo, new AddressPolicy([], 'SKALD_WEBHOOK_ALLOW_HOSTS'), secrets);
    const me = await newUser();
    console.log(`webhook creation property seed: ${SEED}`);
    const octet = fc.integer({ min: 0, max: 255 });
    const host = fc.oneof(
      fc.tuple(octet, octet, octet).map(([a, b, c]) => `10.${a}.${b}.${c}`),
      fc.tuple(octet, octet).map(([a, b]) => `169.254.${a}.${b}`),
      fc.tuple(octet, octet, octet).map(([a, b, c]) => `127.${a}.${b}.${c}`),
      fc.tuple(octet, octet).map(([a, b]) => `[::ffff:192.168.${a}.${b}]`),
      fc.tuple(octet, octet).map(([a, b]) => `[::ffff:127.${a}.0.${b}]`),
      // A name that resolves to loopback, in any case, with or without the root dot.
      fc
        .tuple(fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }), fc.boolean())
        .map(
          ([up, dot]) => [...'localhost'].map((ch, i) => (up[i] ? ch.toUpperCase() : ch)).join('') + (dot ? '.' : ''),
        ),
    );
    await fc.assert(
      fc.asyncProperty(host, fc.constantFrom('http', 'https'), async (h, scheme) => {
        await expect(
          guarded.createWebhook(me, { url: `${scheme}://${h}:8443/in`, scope: 'user' }),
        ).rejects.toMatchObject({
          body: { code: 'invalid_input', field: 'url' },
        });
      }),
      { seed: SEED, numRuns: 200 },
    );
    expect((await guarded.listWebhooks(me)).items).toHaveLength(0);
  });

  it('push: a subscription gets the encrypted message; quiet hours hold it; a 410 removes the subscription', async () => {
    const p = pipeline();
    await p.start();
    const me = await newUser();
    const service = new NotificationsService(repo, allow, secrets, vapid.publicKey);
    expect(service.pushKey()).toEqual({ public_key: vapid.publicKey });
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    const path = `/push-${me.userId}`;
    const input = {
      endpoint: `${base}${path}`,
      keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
      user_agent: 'Firefox on Android',
    };
    const made = await service.subscribePush(me, input);
    expect(made.created).toBe(true);
    // idempotent on the endpoint
    const again = await service.subscribePush(me, input);
    expect(again).toMatchObject({ created: false, subscription: { id: made.subscription.id } });
    expect((await service.listPushSubscriptions(me)).items).toHaveLength(1);
    // another user cannot see or delete it
    const stranger = await newUser();
    expect((await service.listPushSubscriptions(stranger)).items).toHaveLength(0);
    await expect(service.deletePushSubscription(stranger, made.subscription.id)).rejects.toMatchObject({
      body: { code: 'not_found' },
    });

    await p.ingest({
      userId: me.userId,
      eventKey: `j-${randomUUID()}`,
      kind: 'job_finished',
      summary: 'Digest done',
      refs: {},
    });
    await until('the push delivered', () => hitsOn(path).length === 1, 20_000);
    const hit = hitsOn(path)[0];
    const plain = ece.decrypt(hit.raw, { version: 'aes128gcm', privateKey: ecdh, authSecret: auth });
    expect(JSON.parse(plain.toString('utf8'))).toMatchObject({
      kind: 'job',
      title: 'Job finished',
      body: 'Digest done',
      url: '/#cron',
    });
    await until(
      'the last success recorded',
      async () => (await service.listPushSubscriptions(me)).items[0]?.last_success_at !== null,
      20_000,
    );

    // quiet hours hold push like e-mail
    const now = new Date();
    const hh = (h: number) => String((now.getUTCHours() + h + 24) % 24).padStart(2, '0');
    await repo.putSettings(me.userId, {
      channels: { webhook: [], email: [], push: ['job_finished'] },
      quiet_hours: { start: `${hh(-1)}:00`, end: `${hh(2)}:00`, time_zone: 'UTC' },
    });
    await p.ingest({
      userId: me.userId,
      eventKey: `j-${randomUUID()}`,
      kind: 'job_finished',
      summary: 'Later',
      refs: {},
    });
    const held = await queryRows<Pick<NotificationDeliveriesRow, 'status' | 'next_attempt_at'>>(
      ds,
      `SELECT d.status, d.next_attempt_at FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id
        WHERE n.user_id = $1 AND d.channel = 'push' AND n.summary = 'Later'`,
      [me.userId],
    );
    expect(held).toHaveLength(1);
    expect(held[0].status).toBe('pending');
    expect(held[0].next_attempt_at.getTime()).toBeGreaterThan(Date.now() + 30 * 60_000);

    // the push service says the subscription is gone: it is removed, the delivery failed
    await repo.putSettings(me.userId, {
      channels: { webhook: [], email: [], push: ['job_finished'] },
      quiet_hours: null,
    });
    receiver.answer(path, (_req, res) => res.writeHead(410).end());
    await p.ingest({
      userId: me.userId,
      eventKey: `j-${randomUUID()}`,
      kind: 'job_finished',
      summary: 'Gone',
      refs: {},
    });
    await until(
      'the subscription removed',
      async () => (await service.listPushSubscriptions(me)).items.length === 0,
      20_000,
    );
    const [failed] = await queryRows<Pick<NotificationDeliveriesRow, 'status' | 'response_code' | 'attempts'>>(
      ds,
      `SELECT d.status, d.response_code, d.attempts FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id
        WHERE n.user_id = $1 AND d.channel = 'push' AND n.summary = 'Gone'`,
      [me.userId],
    );
    expect(failed).toEqual({ status: 'failed', response_code: 410, attempts: 1 });
  });

  it('a finished turn is told to a user with no socket open, never to one watching; unknown presence tells', async () => {
    const p = pipeline();
    await p.start();
    const away = await newUser();
    const watching = await newUser();
    const unsure = await newUser();
    online.add(watching.userId);
    presenceDown.add(unsure.userId);
    const service = new NotificationsService(repo, allow, secrets);
    const paths = new Map<string, string>();
    for (const u of [away, watching, unsure]) {
      paths.set(u.userId, `/turn-${u.userId}`);
      await service.createWebhook(u, { url: `${base}${paths.get(u.userId)}`, scope: 'user' });
    }
    const turn = (u: Actor) =>
      p.ingest({
        userId: u.userId,
        eventKey: `turn-finished:${u.userId}`,
        kind: 'turn_finished',
        summary: 'The agent finished: done',
        refs: { session_id: randomUUID() },
      });

    expect(await turn(watching)).toEqual({ notification_id: null, duplicate: false, skipped: 'user_online' });
    const first = await turn(away);
    expect(first.duplicate).toBe(false);
    expect(typeof first.notification_id).toBe('string');
    expect(await turn(away)).toEqual({ notification_id: first.notification_id, duplicate: true });
    await turn(unsure);

    await until(
      'the away users webhooks',
      () => [away, unsure].every((u) => hitsOn(paths.get(u.userId)!).length === 1),
      20_000,
    );
    await sleep(500);
    expect(hitsOn(paths.get(away.userId)!)).toHaveLength(1);
    expect(hitsOn(paths.get(watching.userId)!)).toHaveLength(0);
    const [{ n }] = await queryRows<{ n: string }>(ds, `SELECT count(*) AS n FROM notifications WHERE user_id = $1`, [
      watching.userId,
    ]);
    expect(Number(n)).toBe(0);
    expect(JSON.parse(hitsOn(paths.get(away.userId)!)[0].body)).toMatchObject({
      kind: 'turn_finished',
      link: 'http://skald.test/#chat',
    });
  });

  it('a signing secret is sealed at rest, a clear one is sealed at start, and deliveries still verify', async () => {
    const me = await newUser();
    const service = new NotificationsService(repo, allow, secrets);
    const path = `/sealed-${me.userId}`;
    const created = await service.createWebhook(me, { url: `${base}${path}`, scope: 'user' });
    const rowOf = async (id: string) =>
      (await queryRows<WebhooksRow>(ds, `SELECT * FROM webhooks WHERE id = $1`, [id]))[0];
    const stored = await rowOf(created.webhook.id);
    expect(stored.secret).toBeNull();
    expect(stored.sealed_secret).toMatch(/^v1\./);
    const secretBytes = created.secret.slice('whsec_'.length);
    expect(JSON.stringify(stored)).not.toContain(secretBytes);
    expect(JSON.stringify(stored)).not.toContain(Buffer.from(secretBytes, 'base64').toString('hex'));

    // A row from before sealing: its secret in clear until a scheduler starts.
    const legacyPath = `/legacy-${me.userId}`;
    const legacySecret = generateWebhookSecret();
    const legacyId = randomUUID();
    await ds.query(`INSERT INTO webhooks (id, owner_id, scope, url, secret) VALUES ($1, $2, 'user', $3, $4)`, [
      legacyId,
      me.userId,
      `${base}${legacyPath}`,
      legacySecret,
    ]);
    const p = pipeline();
    await p.start();
    const legacy = await rowOf(legacyId);
    expect(legacy.secret).toBeNull();
    expect(legacy.sealed_secret).toMatch(/^v1\./);
    expect(legacy.sealed_secret).not.toContain(legacySecret.slice('whsec_'.length));

    await p.ingest({
      userId: me.userId,
      eventKey: `human-request:${randomUUID()}`,
      kind: 'approval_requested',
      summary: 'Approval needed: execute_cmd ls',
      refs: {},
    });
    await until('both webhooks', () => hitsOn(path).length === 1 && hitsOn(legacyPath).length === 1, 20_000);
    for (const [hit, secret] of [
      [hitsOn(path)[0], created.secret],
      [hitsOn(legacyPath)[0], legacySecret],
    ] as const)
      expect(
        WebhookEventBody.parse(
          new Webhook(secret).verify(hit.body, {
            'webhook-id': String(hit.headers['webhook-id']),
            'webhook-timestamp': String(hit.headers['webhook-timestamp']),
            'webhook-signature': String(hit.headers['webhook-signature']),
          }),
        ).kind,
      ).toBe('approval_requested');

    // Without the deployment's key no webhook is added (its secret would be stored in clear).
    const keyless = new NotificationsService(repo, allow, new WebhookSecrets(null));
    await expect(keyless.createWebhook(me, { url: `${base}/nokey`, scope: 'user' })).rejects.toThrow(
      'the operator has not configured SKALD_SECRETS_KEY',
    );
    // The database refuses a row with both forms, or neither.
    await expect(
      ds.query(`UPDATE webhooks SET secret = 'whsec_x' WHERE id = $1`, [created.webhook.id]),
    ).rejects.toThrow(/webhooks_one_secret/);
  });
});
