import { randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { Webhook } from 'standardwebhooks';
import { WebhookEventBody } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { LocalSmtpServer, LocalWebhookReceiver, type ReceivedHook } from '@skald/testing/local-receivers';
import { ROOT } from '../support/db';
import { until } from '../support/until';

jest.setTimeout(180_000);

/**
 * What needs a user, or finished, reaches them away from the chat: a chat's approval (a signed
 * webhook and a mail), a turn that finished while no socket of theirs was open, a job that waits
 * for a human.
 */
describe('notifications through the whole stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let receiver: LocalWebhookReceiver;
  let smtp: LocalSmtpServer;
  const hits = () => receiver.hits;

  /** A new user with a webhook of their own at `/hook-<user id>`; answers the client, the path and the secret. */
  async function userWithWebhook(): Promise<{ api: ApiClient; path: string; secret: string; webhookId: string }> {
    const api = await admin.createUser(`n-${randomUUID()}@skald.test`, 'correct horse battery');
    const path = `/hook-${api.user!.id}`;
    const created = await api.post<{ webhook: { id: string }; secret: string }>('/api/notifications/webhooks', {
      url: receiver.url(path),
    });
    expect(created.status).toBe(201);
    return { api, path, secret: created.body.secret, webhookId: created.body.webhook.id };
  }

  const verified = (hit: ReceivedHook, secret: string) =>
    WebhookEventBody.parse(
      new Webhook(secret).verify(hit.body, {
        'webhook-id': String(hit.headers['webhook-id']),
        'webhook-timestamp': String(hit.headers['webhook-timestamp']),
        'webhook-signature': String(hit.headers['webhook-signature']),
      }),
    );

  beforeAll(async () => {
    receiver = await LocalWebhookReceiver.start();
    smtp = await LocalSmtpServer.start();
    stack = await Stack.start({
      root: ROOT,
      // Boots slowly on a loaded machine; readiness is not what this spec tests.
      perApp: {
        scheduler: {
          // The receiver is on loopback, which the guard refuses unless the operator allows it.
          SKALD_WEBHOOK_ALLOW_HOSTS: 'localhost',
          SKALD_SMTP_URL: smtp.url,
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
    await receiver.close();
    await smtp.close();
  });

  it('an approval requested in a chat reaches the user webhook, signed and naming the call, and their mailbox', async () => {
    const email = `n-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, 'correct horse battery');

    const refused = await api.post<{ error: { code: string; field?: string } }>('/api/notifications/webhooks', {
      url: receiver.url('/hook', '127.0.0.1'),
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('SKALD_WEBHOOK_ALLOW_HOSTS');

    const created = await api.post<{ webhook: { id: string }; secret: string }>('/api/notifications/webhooks', {
      url: receiver.url('/hook'),
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

    const hit = await until('the signed webhook', () => hits().find((h) => h.body.includes(m)), 30_000);
    const body = verified(hit, secret);
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

    const mail = await until('the mail', () => smtp.mailsTo(email)[0], 30_000);
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
    expect(hits().filter((h) => h.body.includes(m) && h.path === '/hook')).toHaveLength(1);
    ws.close();
  });

  it('a finished turn reaches a user with no socket open, and not one who watched it end', async () => {
    const watcher = await userWithWebhook();
    const away = await userWithWebhook();
    const m = randomUUID();
    await sim.script({ match: `[W-${m}]`, replies: [{ content: `watched-${m}` }] });
    await sim.script({ match: `[A-${m}]`, replies: [{ content: `away-${m}` }] });

    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: watcher.api.token });
    await ws.waitForType('hello');
    ws.send({ type: 'message', client_message_id: `w-${m}`, content: `watch this [W-${m}]` });
    await ws.waitFor((f) => f.type === 'done' && f.content === `watched-${m}`);

    // No socket: the message goes over REST, and the answer is read later.
    const sent = await away.api.post('/api/web/messages', { client_message_id: `a-${m}`, content: `later [A-${m}]` });
    expect(sent.status).toBeLessThan(300);
    const hit = await until('the turn_finished webhook', () => receiver.hitsOn(away.path)[0], 60_000);
    const body = verified(hit, away.secret);
    expect(body).toMatchObject({ kind: 'turn_finished', link: 'https://skald.e2e.test/#chat' });
    expect(body.summary).toContain(`away-${m}`);
    expect(body.refs.session_id).toEqual(expect.any(String));

    // The watcher's turn ended before the away user's began: its event was decided by then.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.hitsOn(watcher.path)).toEqual([]);
    const log = await watcher.api.get<{ items: unknown[] }>(
      `/api/notifications/webhooks/${watcher.webhookId}/deliveries`,
    );
    expect(log.body.items).toEqual([]);
    expect(receiver.hitsOn(away.path)).toHaveLength(1);
    ws.close();
  });

  it('a cron job whose turn waits for an approval is job_needs_human, once, then job_finished; never approval_requested or turn_finished', async () => {
    const owner = await userWithWebhook();
    const m = randomUUID();
    await sim.script({
      match: `[J-${m}]`,
      replies: [
        { content: '', tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo job-${m}` } }] },
        { content: `job done ${m}` },
      ],
    });
    const job = await owner.api.post<{ id: string }>('/api/cron/jobs', {
      title: 'Needs a human',
      prompt: `Run it [J-${m}]`,
      cron: '0 0 1 1 *',
      enabled: false,
      run_context: { allow_approvals: true },
    });
    expect(job.status).toBe(201);
    const run = await owner.api.post<{ run_id: string }>(`/api/cron/jobs/${job.body.id}/run`);
    expect(run.status).toBe(202);

    const needs = await until('the job_needs_human webhook', () => receiver.hitsOn(owner.path)[0], 60_000);
    const body = verified(needs, owner.secret);
    expect(body).toMatchObject({
      kind: 'job_needs_human',
      link: 'https://skald.e2e.test/#inbox',
      refs: { run_id: run.body.run_id, tool_name: 'execute_cmd' },
    });
    expect(body.summary).toContain(`echo job-${m}`);

    const inbox = await owner.api.get<{ approvals: Array<{ request_id: string }> }>('/api/inbox');
    const request = inbox.body.approvals.find((a) => a.request_id === body.refs.request_id);
    expect(request).toBeDefined();
    const resolved = await owner.api.post(`/api/inbox/approvals/${request!.request_id}/resolve`, { action: 'approve' });
    expect(resolved.status).toBe(200);

    const kinds = () => receiver.hitsOn(owner.path).map((h) => verified(h, owner.secret).kind);
    await until('the job_finished webhook', () => kinds().includes('job_finished'), 90_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(kinds().sort()).toEqual(['job_finished', 'job_needs_human']);
  });
});
