import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import * as ece from 'http_ece';
import type { Browser, BrowserContext, Worker } from 'playwright-core';
import { DataSource } from 'typeorm';
import { readPushMessage, type PushMessage } from '@skald/contracts/push-message';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { openWithServiceWorker, type WorkerPage } from '../support/service-worker';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

/** What the worker's global scope offers the evaluated code (the test tsconfig has no WebWorker library). */
interface WorkerScope {
  registration: {
    getNotifications(o?: { tag?: string }): Promise<Array<{ title: string; tag: string; close(): void }>>;
  };
  dispatchEvent(e: unknown): boolean;
}
declare const NotificationEvent: new (type: string, init: { notification: unknown; action: string }) => unknown;

/**
 * Approve from a push notification, end to end: a real approval waits in a chat; the scheduler's
 * push (encrypted to a subscription whose keys the test holds, posted to a push endpoint the test
 * runs) carries a real action token; that message, delivered to the web client's service worker in
 * Chromium (DevTools protocol), shows Approve and Reject; Approve approves exactly that call, once,
 * through the push channel; the turn continues; the token is refused a second time.
 */
describe('web: approve from a push notification', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let ctx: BrowserContext;
  let deliver: WorkerPage['deliver'];
  let pushEndpoint: Server;
  const pushes: { headers: IncomingMessage['headers']; body: Buffer }[] = [];

  beforeAll(async () => {
    pushEndpoint = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        pushes.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(201).end();
      });
    });
    await new Promise<void>((r) => pushEndpoint.listen(0, '127.0.0.1', r));
    ({ stack, sim, admin, db, browser } = await startWebStack({
      // the push endpoint is on loopback, over http: the operator's allow-list lets it through
      perApp: { scheduler: { SKALD_WEBHOOK_ALLOW_HOSTS: 'localhost' } },
    }));
    ({ ctx, deliver } = await openWithServiceWorker(browser, stack.gatewayUrl));
  });
  afterAll(async () => {
    await stopWebStack({ stack, db, browser });
    await new Promise((r) => pushEndpoint?.close(r));
  });

  it('Approve in the notification approves exactly that call once; the turn continues; a replay is refused', async () => {
    const api = await admin.createUser(`push-${randomUUID()}@skald.test`, 'correct horse battery');
    // the test plays the browser's side of a subscription: its keys decrypt what the scheduler pushes
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    const port = (pushEndpoint.address() as AddressInfo).port;
    const key = await api.get<{ public_key: string | null }>('/api/notifications/push/key');
    expect(key.body.public_key).toMatch(/^[\w-]{87}$/);
    const sub = await api.post<{ subscription: { id: string }; created: boolean }>(
      '/api/notifications/push/subscriptions',
      {
        endpoint: `http://localhost:${port}/push/${randomUUID()}`,
        keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
        user_agent: 'Chromium on Linux',
      },
    );
    expect(sub.status).toBe(201);
    expect(sub.body.created).toBe(true);

    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    await ws.waitForType('hello');
    const m = `p-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo pushed-${m}` } }] },
        { content: `done ${m}` },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `run ${m}` });
    const requested = await ws.waitForType('approval_requested');

    // the scheduler's push: VAPID-signed, encrypted to the subscription, a real action token inside
    const push = await until('the push', async () => pushes.find((p) => p.body.length > 0) ?? null, 60_000);
    expect(String(push.headers.authorization)).toMatch(/^vapid t=[\w-]+\.[\w-]+\.[\w-]+, k=/);
    const plain = ece.decrypt(push.body, { version: 'aes128gcm', privateKey: ecdh, authSecret: auth });
    const message = readPushMessage(JSON.parse(plain.toString('utf8'))) as PushMessage;
    expect(message).toMatchObject({ kind: 'approval', url: '/#inbox' });
    expect(message.body).toContain(`echo pushed-${m}`);
    expect(message.action_token).toMatch(/^[\w-]{43}$/);
    expect(plain.toString('utf8')).not.toContain(api.token!);

    // the same message, delivered to the service worker as the push service would
    await deliver(plain.toString('utf8'));
    const worker: Worker = await until('the service worker', async () => ctx.serviceWorkers()[0] ?? null);
    const shown = await until('the notification', async () => {
      const list = await worker.evaluate(
        async (tag) =>
          (await (globalThis as unknown as WorkerScope).registration.getNotifications({ tag })).map((n) => n.title),
        message.tag,
      );
      return list.length > 0 ? list : null;
    });
    expect(shown).toEqual([message.title]);

    // Approve, as the person's tap on the notification's button would (notificationclick, action approve)
    await worker.evaluate(async (tag) => {
      const scope = globalThis as unknown as WorkerScope;
      const [n] = await scope.registration.getNotifications({ tag });
      try {
        scope.dispatchEvent(new NotificationEvent('notificationclick', { notification: n, action: 'approve' }));
      } catch {
        // waitUntil of an event the test dispatched throws after the worker's handler has started its work
      }
    }, message.tag);

    const resolved = await ws.waitFor((f) => f.type === 'approval_resolved' && f.request_id === requested.request_id);
    expect(resolved).toMatchObject({ approved: true });
    await ws.waitFor((f) => f.type === 'done' && f.content === `done ${m}`);
    const [row] = await db.query<Array<{ status: string; channel: string; actor_user_id: string }>>(
      `SELECT status, channel, actor_user_id FROM approval_requests WHERE id = $1`,
      [requested.request_id],
    );
    expect(row).toEqual({ status: 'approved', channel: 'push', actor_user_id: api.user!.id });
    const audit = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM approval_audit WHERE request_id = $1 AND by = 'human'`,
      [requested.request_id],
    );
    expect(audit[0].n).toBe(1);
    // the worker says what happened, under the same tag
    const after = await until('the result notification', async () => {
      const list = await worker.evaluate(
        async (tag) =>
          (await (globalThis as unknown as WorkerScope).registration.getNotifications({ tag })).map((n) => n.title),
        message.tag,
      );
      return list.some((t) => t.startsWith('Approved')) ? list : null;
    });
    expect(after).toEqual([`Approved: ${message.title}`]);

    // the token acted once: a second redemption, from anywhere, is refused
    const again = await fetch(`${stack.gatewayUrl}/api/approvals/actions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: message.action_token, action: 'reject' }),
    });
    expect(again.status).toBe(403);
    const [still] = await db.query<Array<{ status: string }>>(`SELECT status FROM approval_requests WHERE id = $1`, [
      requested.request_id,
    ]);
    expect(still.status).toBe('approved');
    ws.close();
  });

  it('the notifications page shows "Push notifications on this device" at every width, axe clean', async () => {
    const email = `pushui-${randomUUID()}@skald.test`;
    await admin.createUser(email, 'correct horse battery');
    const ui = await ctx.newPage();
    await signIn(ui, stack.gatewayUrl, email, 'correct horse battery');
    await ui.goto(`${stack.gatewayUrl}/#notifications`);
    const section = ui.getByRole('region', { name: 'Push notifications on this device' });
    await section.waitFor();
    // headless Chromium has a worker and PushManager and the server a key: the device is off until enabled
    await section.getByRole('button', { name: 'Enable push on this device' }).waitFor();
    for (const width of [1280, 375, 320]) {
      await ui.setViewportSize({ width, height: 900 });
      await section.scrollIntoViewIfNeeded();
      await shot(ui, `push-device-${width}`);
      expect(await seriousViolations(ui)).toEqual([]);
    }
    await ui.close();
  });
});
