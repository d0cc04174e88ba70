import { randomUUID } from 'node:crypto';
import { ApiClient, Stack, UpgradeRefused, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(120_000);

describe('gateway: identity, errors and the WebSocket edge', () => {
  let stack: Stack;
  let admin: ApiClient;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
  });
  afterAll(async () => {
    await stack?.stop();
    await assertInvariantsAndClose(await testDb());
  });

  it('logs in the bootstrapped admin and refuses a wrong password with 401', async () => {
    expect(admin.user).toMatchObject({ email: stack.admin.email, role: 'admin' });
    const anon = new ApiClient(stack.gatewayUrl);
    const bad = await anon.post<{ error: { code: string } }>('/api/auth/login', {
      email: stack.admin.email,
      password: 'wrong password',
    });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('unauthorized');
    const noAuth = await anon.get('/api/sessions');
    expect(noAuth.status).toBe(401);
  });

  it('answers bad input with 400 naming the field, a body over 1 MiB with 413, never a stack trace', async () => {
    const r = await admin.post<{ error: { code: string; field?: string; message: string } }>('/api/web/messages', {
      content: 'x',
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_input', field: 'client_message_id' });
    const badSource = await admin.post<{ error: { code: string; field?: string } }>('/api/Not A Source/messages', {
      client_message_id: 'a',
      content: 'x',
    });
    expect(badSource.status).toBe(400);
    const big = await admin.request(
      'POST',
      '/api/web/messages',
      JSON.stringify({ client_message_id: 'big', content: 'x'.repeat(1_100_000) }),
      { 'content-type': 'application/json' },
    );
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ error: { code: 'too_large' } });
    const notJson = await admin.request('POST', '/api/web/messages', '{oops', { 'content-type': 'application/json' });
    expect(notJson.status).toBe(400);
    expect(JSON.stringify(notJson.body)).not.toMatch(/at .*\.js/);
  });

  it('keeps admin routes for admins: a user gets 403, an admin may act', async () => {
    const user = await admin.createUser(`u-${randomUUID()}@skald.test`, 'correct horse battery');
    expect((await user.get('/api/admin/users')).status).toBe(403);
    expect(
      (
        await user.post('/api/admin/users', {
          email: `x-${randomUUID()}@skald.test`,
          password: 'correct horse battery',
        })
      ).status,
    ).toBe(403);
    const list = await admin.get<{ items: Array<{ email: string }> }>('/api/admin/users');
    expect(list.status).toBe(200);
    expect(list.body.items.map((u) => u.email)).toContain(user.user!.email);
  });

  it('authenticates the socket by header or single-use ticket, and refuses before the upgrade', async () => {
    const user = await admin.createUser(`w-${randomUUID()}@skald.test`, 'correct horse battery');
    await expect(WsTestClient.connect(stack.gatewayUrl, {})).rejects.toMatchObject({ status: 401 });
    await expect(WsTestClient.connect(stack.gatewayUrl, { token: 'not-a-token' })).rejects.toBeInstanceOf(
      UpgradeRefused,
    );
    await expect(
      WsTestClient.connect(stack.gatewayUrl, { token: user.token, origin: 'https://evil.example' }),
    ).rejects.toMatchObject({ status: 403 });

    const { body } = await user.post<{ ticket: string }>('/api/auth/ws-ticket');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { ticket: body.ticket, origin: stack.gatewayUrl });
    expect((await ws.waitForType('hello')).protocol).toBe(1);
    ws.close();
    await expect(WsTestClient.connect(stack.gatewayUrl, { ticket: body.ticket })).rejects.toMatchObject({
      status: 401,
    });
  });

  it('answers invalid frames with an error event and keeps the socket open', async () => {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: admin.token });
    await ws.waitForType('turn_running');
    ws.send('not json');
    ws.send({ type: 'no_such_type' });
    ws.send({ type: 'message', content: 'missing id' });
    await ws.waitFor((f) => f.type === 'error' && f.field === 'client_message_id');
    const errors = ws.frames.filter((f) => f.type === 'error');
    expect(errors.map((e) => e.code)).toEqual(['invalid_input', 'invalid_input', 'invalid_input']);
    expect(errors[1].field).toBe('type');
    ws.send({ type: 'message', client_message_id: `help-${randomUUID()}`, content: '/nonsense' });
    const help = await ws.waitForType('command_result');
    expect(String(help.content)).toContain('/stop');
    expect(ws.closeCode).toBeNull();
    ws.close();
  });

  it('closes a socket whose frame is over 1 MiB with 1009', async () => {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: admin.token });
    await ws.waitForType('hello');
    ws.send({ type: 'message', client_message_id: 'huge', content: 'x'.repeat(1_200_000) });
    expect(await ws.closed()).toBe(1009);
  });

  it('ends tokens and sockets when an admin disables a user', async () => {
    const user = await admin.createUser(`d-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token });
    await ws.waitForType('hello');
    const r = await admin.request('PATCH', `/api/admin/users/${user.user!.id}`, { disabled: true });
    expect(r.status).toBe(200);
    expect(await ws.closed()).toBe(4401);
    expect((await user.get('/api/sessions')).status).toBe(401);
  });

  it('issues API tokens shown once, usable as bearer, revocable', async () => {
    const user = await admin.createUser(`t-${randomUUID()}@skald.test`, 'correct horse battery');
    const created = await user.post<{ id: string; token: string; name: string }>('/api/auth/tokens', { name: 'cli' });
    expect(created.status).toBe(201);
    const cli = new ApiClient(stack.gatewayUrl, created.body.token);
    expect((await cli.get('/api/sessions')).status).toBe(200);
    const list = await user.get<{ items: Array<Record<string, unknown>> }>('/api/auth/tokens');
    expect(list.body.items).toHaveLength(1);
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
    expect((await user.request('DELETE', `/api/auth/tokens/${created.body.id}`)).status).toBe(204);
    expect((await cli.get('/api/sessions')).status).toBe(401);
    const other = await admin.createUser(`o-${randomUUID()}@skald.test`, 'correct horse battery');
    expect((await other.request('DELETE', `/api/auth/tokens/${created.body.id}`)).status).toBe(404);
  });

  it('serves health on every app and the OpenAPI document', async () => {
    for (const p of stack.processes.filter((x) => x.name !== 'llm-sim')) {
      for (const path of ['/healthz', '/readyz', '/metrics']) {
        const r = await fetch(`${p.url}${path}`);
        expect({ app: p.name, path, status: r.status }).toEqual({ app: p.name, path, status: 200 });
      }
    }
    const doc = (await (await fetch(`${stack.gatewayUrl}/api/docs`)).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/auth/login', '/api/sessions', '/api/sessions/{id}', '/api/{source}/messages']),
    );
  });
});
