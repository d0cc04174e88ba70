import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { Webhook } from 'standardwebhooks';
import { WebhookEventBody } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT } from '../support/db';
import { until } from '../support/until';

jest.setTimeout(180_000);

/** A chat's approval reaches the user away from it: a signed webhook and a mail. */
describe('notifications through the whole stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let receiver: Server;
  let smtp: SMTPServer;
  const hits: { headers: IncomingMessage['headers']; body: string }[] = [];
  const mails: { to: string[]; raw: string }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
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
    stack = await Stack.start({
      root: ROOT,
      // Boots slowly on a loaded machine; readiness is not what this spec tests.
      readyTimeoutMs: 90_000,
      perApp: {
        scheduler: {
          // The receiver is on loopback, which the guard refuses unless the operator allows it.
          SKALD_WEBHOOK_ALLOW_HOSTS: 'localhost',
          SKALD_SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
          SKALD_SMTP_FROM: 'Skald <skald@e2e.test>',
          SKALD_PUBLIC_URL: 'https://skald.e2e.test',
        },
      },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
  });

  afterAll(async () => {
    await stack?.stop();
    await new Promise((r) => receiver.close(r));
    await new Promise<void>((r) => smtp.close(() => r()));
  });

  it('an approval requested in a chat reaches the user webhook, signed and naming the call, and their mailbox', async () => {
    const email = `n-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, 'correct horse battery');
    const port = (receiver.address() as AddressInfo).port;

    const refused = await api.post<{ error: { code: string; field?: string } }>('/api/notifications/webhooks', {
      url: `http://127.0.0.1:${port}/hook`,
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('SKALD_WEBHOOK_ALLOW_HOSTS');

    const created = await api.post<{ webhook: { id: string }; secret: string }>('/api/notifications/webhooks', {
      url: `http://localhost:${port}/hook`,
    });
    expect(created.status).toBe(201);
    const { secret } = created.body;
    const listed = await api.get('/api/notifications/webhooks');
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    const m = `n-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo deploy-${m}` } }] },
        { content: 'ok' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m, content: `deploy ${m}` });
    const requested = await ws.waitForType('approval_requested');

    const hit = await until('the signed webhook', async () => hits.find((h) => h.body.includes(m)), 30_000);
    const body = WebhookEventBody.parse(
      new Webhook(secret).verify(hit.body, {
        'webhook-id': String(hit.headers['webhook-id']),
        'webhook-timestamp': String(hit.headers['webhook-timestamp']),
        'webhook-signature': String(hit.headers['webhook-signature']),
      }),
    );
    expect(body).toMatchObject({
      kind: 'approval_requested',
      user_id: api.user!.id,
      link: 'https://skald.e2e.test/#inbox',
      refs: {
        session_id: sessionId,
        tool_call_id: requested.tool_call_id,
        request_id: requested.request_id,
        tool_name: 'execute_cmd',
      },
    });
    expect(body.summary).toContain(`echo deploy-${m}`);

    const mail = await until('the mail', async () => mails.find((x) => x.to.includes(email)), 30_000);
    const parsed = await simpleParser(mail.raw);
    expect(parsed.subject).toContain('Approval needed');
    expect(parsed.text).toContain(`echo deploy-${m}`);
    expect(parsed.text).toContain('https://skald.e2e.test/#inbox');
    expect(mail.raw).not.toContain(api.token!);

    const log = await api.get<{ items: Array<{ status: string; attempts: number; response_code: number }> }>(
      `/api/notifications/webhooks/${created.body.webhook.id}/deliveries`,
    );
    expect(log.body.items).toEqual([expect.objectContaining({ status: 'delivered', attempts: 1, response_code: 204 })]);
    const stranger = await admin.createUser(`s-${randomUUID()}@skald.test`, 'correct horse battery');
    expect((await stranger.get(`/api/notifications/webhooks/${created.body.webhook.id}/deliveries`)).status).toBe(404);

    ws.send({ type: 'approve_tool', request_id: requested.request_id });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'ok');
    // One notification for the one request, however the turn went on.
    expect(hits.filter((h) => h.body.includes(m))).toHaveLength(1);
    ws.close();
  });
});
