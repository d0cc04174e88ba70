import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import fc from 'fast-check';
import Redis from 'ioredis';
import { simpleParser } from 'mailparser';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { WebhookEventBody, type Actor, type UserStandingReply } from '@skald/contracts';
import { RemoteError } from '@skald/messaging';
import { queryRows, type NotificationDeliveriesRow } from '@skald/persistence';
import { AddressPolicy } from '@skald/service-kit';
import { PrivateRedis } from '@skald/testing';
import { EmailChannel } from './channels/email.channel';
import { WebhookChannel } from './channels/webhook.channel';
import { NotificationPipeline, PipelineOptions } from './notification-pipeline';
import { NotificationsRepository } from './notifications.repository';
import { NotificationsService } from './notifications.service';

jest.setTimeout(120_000);

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T | null | undefined | false> | T, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(50);
  }
}

interface Hit {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('notification pipeline (Postgres, Redis, a local receiver and SMTP server)', () => {
  let ds: DataSource;
  let redis: PrivateRedis;
  const conns: Redis[] = [];
  const pipelines: NotificationPipeline[] = [];
  let server: Server;
  let base = '';
  const hits: Hit[] = [];
  /** Per path: how the receiver answers. */
  const answers = new Map<string, (res: ServerResponse) => void>();
  let smtp: SMTPServer;
  let smtpPort = 0;
  const mails: { to: string[]; raw: string }[] = [];
  const emails = new Map<string, string>();
  const notices: { userId: string; summary: string }[] = [];
  let repo: NotificationsRepository;
  const prefix = `skald-notify-it-${process.pid}-${Date.now()}`;
  const allow = new AddressPolicy(['localhost'], 'SKALD_WEBHOOK_ALLOW_HOSTS');

  const owners = {
    standing: (userId: string): Promise<UserStandingReply> =>
      Promise.resolve(
        emails.has(userId)
          ? { standing: 'active', role: 'user', email: emails.get(userId) }
          : { standing: 'deleted', role: null },
      ),
  };

  function pipeline(over: Partial<PipelineOptions> = {}): NotificationPipeline {
    const p = new NotificationPipeline(
      repo,
      {
        webhook: new WebhookChannel({ policy: allow, timeoutMs: 2_000, now: () => new Date() }),
        email: new EmailChannel({
          smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
          from: 'skald@example.test',
          timeoutMs: 5_000,
        }),
      },
      owners,
      {
        notice: (userId, summary) => {
          notices.push({ userId, summary });
          return Promise.resolve();
        },
      },
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

  const hitsOn = (path: string) => hits.filter((h) => h.path === path);

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: DATABASE_URL, extra: { max: 6 } });
    await ds.initialize();
    repo = new NotificationsRepository(ds);
    redis = await PrivateRedis.start();
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        hits.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        (answers.get(path) ?? ((r: ServerResponse) => r.writeHead(204).end()))(res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://localhost:${(server.address() as AddressInfo).port}`;
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString() });
          cb();
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    smtpPort = (smtp.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const p of pipelines) await p.stop();
    for (const c of conns) c.disconnect();
    await redis.destroy();
    await new Promise((r) => server.close(r));
    await new Promise<void>((r) => smtp.close(() => r()));
    await ds.destroy();
  });

  it('an approval reaches the user webhook signed (once, however often it is sent) and their mailbox', async () => {
    const p = pipeline();
    await p.start();
    const me = await newUser();
    const service = new NotificationsService(repo, allow);
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

    await until(() => hitsOn(path).length === 1 && mails.some((m) => m.to.includes(emails.get(me.userId)!)));
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
    const mail = await simpleParser(mails.find((m) => m.to.includes(emails.get(me.userId)!))!.raw);
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
    await repo.putSettings(me.userId, { channels: { webhook: ['job_finished'], email: [] }, quiet_hours: null });
    const service = new NotificationsService(repo, allow);
    const path = `/down-${me.userId}`;
    answers.set(path, (res) => res.writeHead(503).end('down'));
    const { webhook } = await service.createWebhook(me, { url: `${base}${path}`, scope: 'user' });

    await p.ingest({
      userId: me.userId,
      eventKey: 'job-run:1',
      kind: 'job_finished',
      summary: 'Backup failed',
      refs: {},
    });
    const [failed] = await until(async () => {
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
    const [hook] = await until(async () => {
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
    const service = new NotificationsService(repo, allow);
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
    await until(() => hitsOn(path).length === 1);
  });

  it('an admin webhook receives other users events of the chosen kinds; quiet hours hold the mail, not the webhook', async () => {
    const p = pipeline();
    await p.start();
    const admin = await newUser('admin');
    const user = await newUser();
    const service = new NotificationsService(repo, allow);
    const path = `/admin-${admin.userId}`;
    await expect(service.createWebhook(user, { url: `${base}/x`, scope: 'admin' })).rejects.toMatchObject({
      body: { code: 'forbidden' },
    });
    await service.createWebhook(admin, { url: `${base}${path}`, scope: 'admin', kinds: ['question_asked'] });
    const now = new Date();
    const hh = (h: number) => String((now.getUTCHours() + h + 24) % 24).padStart(2, '0');
    await repo.putSettings(user.userId, {
      channels: { webhook: [], email: ['question_asked'] },
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
    await until(() => hitsOn(path).length >= 1);
    await sleep(500);
    expect(hitsOn(path).map((h) => (JSON.parse(h.body) as { kind: string; user_id: string }).user_id)).toEqual([
      user.userId,
    ]);
    expect(mails.some((m) => m.to.includes(emails.get(user.userId)!))).toBe(false);
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
    const guarded = new NotificationsService(repo, new AddressPolicy([], 'SKALD_WEBHOOK_ALLOW_HOSTS'));
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
});
