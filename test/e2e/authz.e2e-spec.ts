import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import pino from 'pino';
import { Actor, Id } from '@skald/contracts';
import { Bus, NatsBus } from '@skald/messaging';
import { ApiClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { until } from '../support/until';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

interface OpenApiDoc {
  paths: Record<string, Record<string, { 'x-skald-auth': 'public' | 'user' | 'admin' }>>;
}

/**
 * An authorization matrix generated from the served OpenAPI document (every
 * route, and every WS message that takes an id), plus approvals through the gateway with two
 * users. Human requests are registered over NATS the way the session worker does it (the loop's
 * side is wired separately); everything else goes through the public REST / WS API.
 */
describe('authorization matrix and approvals through the gateway', () => {
  let stack: Stack;
  let admin: ApiClient;
  let alice: ApiClient;
  let bob: ApiClient;
  let bus: Bus;
  let doc: OpenApiDoc;
  let aliceWs: WsTestClient;
  let aliceCli: WsTestClient;
  let aliceSession: string;
  const ids = {
    session: '',
    token: '',
    bypass: '',
    toolCall: '',
    request: '',
    question: '',
    agent: '',
    cronJob: '',
    message: '',
    webhook: '',
    pushSubscription: '',
  };

  const register = async (actor: Actor, sessionId: string, kind: 'approval' | 'clarification') => {
    const r = {
      actor,
      request_id: randomUUID(),
      kind,
      tool_call_id: randomUUID(),
      session_id: sessionId,
      source: 'web',
      tool_name: kind === 'approval' ? 'execute_cmd' : 'ask_user_clarification',
      arguments: { command: 'make deploy' },
      ...(kind === 'clarification'
        ? { question: { title: 'Env?', question: 'Which env?', suggested_answers: ['prod'] } }
        : {}),
    };
    await bus.call('approval.register', r);
    return r;
  };

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    alice = await admin.createUser(`alice-${randomUUID()}@skald.test`, 'correct horse battery');
    bob = await admin.createUser(`bob-${randomUUID()}@skald.test`, 'correct horse battery');
    bus = await NatsBus.connect({ ...stack.natsClient, name: `authz-e2e-${process.pid}` }, pino({ level: 'silent' }));
    doc = (await (await fetch(`${stack.gatewayUrl}/api/docs`)).json()) as OpenApiDoc;

    aliceWs = await WsTestClient.connect(stack.gatewayUrl, { token: alice.token, source: 'web' });
    aliceSession = (await aliceWs.waitForType('hello')).session_id as string;
    aliceCli = await WsTestClient.connect(stack.gatewayUrl, { token: alice.token, source: 'cli' });
    await aliceCli.waitForType('hello');
    ids.session = aliceSession;
    ids.token = (await alice.post<{ id: string }>('/api/auth/tokens', { name: 'cli' })).body.id;
    const bypass = await alice.post<{ id: string }>('/api/approval/bypasses', {
      session_id: aliceSession,
      scope: { mcp_server: 'github' },
      secs: 3600,
    });
    expect(bypass.status).toBe(201);
    ids.bypass = bypass.body.id;
    const approval = await register({ userId: alice.user!.id, role: 'user' }, aliceSession, 'approval');
    ids.request = approval.request_id;
    ids.toolCall = approval.tool_call_id;
    ids.question = (await register({ userId: alice.user!.id, role: 'user' }, aliceSession, 'clarification')).request_id;
    const mcp = await alice.post('/api/mcp/servers', { name: 'alice-tools', transport: 'stdio', command: 'true' });
    expect(mcp.status).toBe(201);
    // an agent of alice's own (agent ids are per user only for users' own agents)
    ids.agent = `alice-agent-${randomUUID().slice(0, 8)}`;
    const agent = await alice.request('PUT', `/api/agents/${ids.agent}`, {
      prompt: 'You are alice’s agent.',
      meta: { name: 'Alice agent', type: 'task' },
    });
    expect(agent.status).toBe(200);
    const cron = await alice.post<{ id: string }>('/api/cron/jobs', {
      title: 'alice morning',
      prompt: 'summarise my inbox',
      cron: '0 7 * * *',
      enabled: false,
    });
    expect(cron.status).toBe(201);
    ids.cronJob = cron.body.id;
    // a webhook of alice's (an address literal: nothing to resolve on a closed network)
    const hook = await alice.post<{ webhook: { id: string } }>('/api/notifications/webhooks', {
      url: 'https://203.0.113.7/alice',
    });
    expect(hook.status).toBe(201);
    ids.webhook = hook.body.webhook.id;
    // a push subscription of alice's (an address literal again)
    const sub = await alice.post<{ subscription: { id: string } }>('/api/notifications/push/subscriptions', {
      endpoint: 'https://203.0.113.7/wpush/alice',
      keys: { p256dh: Buffer.alloc(65, 4).toString('base64url'), auth: Buffer.alloc(16, 1).toString('base64url') },
    });
    expect(sub.status).toBe(201);
    ids.pushSubscription = sub.body.subscription.id;
    // a message of alice's (the edit route names one)
    const sent = await alice.post('/api/web/messages', {
      client_message_id: `alice-${randomUUID()}`,
      content: 'alice asks',
    });
    expect(sent.status).toBeLessThan(300);
    ids.message = await until('alice’s message in her chat', async () => {
      const page = await alice.get<{ items: Array<{ id: string; role: string }> }>('/api/web/messages');
      return page.body.items.find((i) => i.role === 'user')?.id;
    });
  });
  afterAll(async () => {
    aliceWs?.close();
    aliceCli?.close();
    await bus?.drain();
    await stack?.stop();
    await assertInvariantsAndClose(await testDb());
  });

  /** Per route template that takes an id: the id of alice's that it names, and a valid body. */
  const FIXTURES: Record<string, { id: () => string; body?: unknown; query?: string }> = {
    'delete /api/auth/tokens/{id}': { id: () => ids.token },
    'get /api/sessions/{id}': { id: () => ids.session },
    'post /api/tools/{id}/resolve': { id: () => ids.toolCall, body: { action: 'reject', note: 'bob says no' } },
    'post /api/inbox/approvals/{id}/resolve': { id: () => ids.request, body: { action: 'approve', bypass_secs: 0 } },
    'post /api/inbox/clarifications/{id}/resolve': { id: () => ids.question, body: { answer: 'dev' } },
    'delete /api/approval/bypasses/{id}': { id: () => ids.bypass },
    // MCP servers are named per user: bob's request names alice's server, which he does not have
    'delete /api/mcp/servers/{name}': { id: () => 'alice-tools' },
    'patch /api/mcp/servers/{name}': { id: () => 'alice-tools', body: { enabled: false } },
    'get /api/agents/{id}': { id: () => ids.agent },
    'put /api/agents/{id}': { id: () => ids.agent, body: { prompt: 'bob was here' } },
    'delete /api/agents/{id}/override': { id: () => ids.agent },
    'patch /api/cron/jobs/{id}': { id: () => ids.cronJob, body: { title: 'bob was here' } },
    'delete /api/cron/jobs/{id}': { id: () => ids.cronJob },
    'delete /api/notifications/webhooks/{id}': { id: () => ids.webhook },
    'get /api/notifications/webhooks/{id}/deliveries': { id: () => ids.webhook },
    'delete /api/notifications/push/subscriptions/{id}': { id: () => ids.pushSubscription },
    'post /api/cron/jobs/{id}/toggle': { id: () => ids.cronJob },
    'post /api/cron/jobs/{id}/run': { id: () => ids.cronJob },
    'post /api/cron/jobs/{id}/kill': { id: () => ids.cronJob },
    'patch /api/sessions/{id}': { id: () => ids.session, body: { title: 'bob was here' } },
    'delete /api/sessions/{id}': { id: () => ids.session },
    'get /api/sessions/{id}/export': { id: () => ids.session, query: '?format=json' },
    'post /api/sessions/{id}/activate': { id: () => ids.session },
    'get /api/sessions/{id}/run-context': { id: () => ids.session },
    'put /api/sessions/{id}/run-context': { id: () => ids.session, body: { working_directory: 'bob' } },
    // bob's own web conversation, alice's message id
    'post /api/{source}/messages/{id}/edit': {
      id: () => ids.message,
      body: { content: 'bob was here', client_message_id: `bob-${randomUUID()}` },
    },
  };

  const routes = () =>
    Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ method, path, auth: op['x-skald-auth'] })),
    );

  async function aliceUnchanged(): Promise<void> {
    const hooks = await alice.get<{ items: Array<{ id: string }> }>('/api/notifications/webhooks');
    expect(hooks.body.items.map((h) => h.id)).toEqual([ids.webhook]);
    const subs = await alice.get<{ items: Array<{ id: string }> }>('/api/notifications/push/subscriptions');
    expect(subs.body.items.map((s) => s.id)).toEqual([ids.pushSubscription]);
    const inbox = await alice.get<{
      approvals: Array<{ request_id: string }>;
      clarifications: Array<{ request_id: string }>;
    }>('/api/inbox');
    expect(inbox.body.approvals.map((a) => a.request_id)).toContain(ids.request);
    expect(inbox.body.clarifications.map((a) => a.request_id)).toContain(ids.question);
    const bypasses = await alice.get<{ items: Array<{ id: string }> }>('/api/approval/bypasses');
    expect(bypasses.body.items.map((b) => b.id)).toContain(ids.bypass);
    const tokens = await alice.get<{ items: Array<{ id: string }> }>('/api/auth/tokens');
    expect(tokens.body.items.map((t) => t.id)).toContain(ids.token);
    const mcp = await alice.get<{ items: Array<{ name: string }> }>('/api/mcp/servers');
    expect(mcp.body.items.map((m) => m.name)).toContain('alice-tools');
    const agent = await alice.get<{ prompt: string }>(`/api/agents/${ids.agent}`);
    expect(agent).toMatchObject({ status: 200, body: { prompt: 'You are alice’s agent.' } });
    const cron = await alice.get<{ items: Array<{ id: string; title: string; enabled: boolean }> }>('/api/cron/jobs');
    expect(cron.body.items).toEqual([
      expect.objectContaining({ id: ids.cronJob, title: 'alice morning', enabled: false }),
    ]);
    expect((await alice.get<{ items: unknown[] }>(`/api/cron/runs?job_id=${ids.cronJob}`)).body.items).toEqual([]);
    // her conversation: still there, untitled by bob, active, its run context and message untouched
    const sessions = await alice.get<{ items: Array<{ id: string; title: string | null }> }>(
      '/api/sessions?source=web',
    );
    const own = sessions.body.items.find((x) => x.id === ids.session);
    expect(own).toBeDefined();
    expect(own?.title ?? '').not.toContain('bob');
    const rc = await alice.get<{ working_directory: string | null }>(`/api/sessions/${ids.session}/run-context`);
    expect(rc).toMatchObject({ status: 200, body: { working_directory: null } });
    const chat = await alice.get<{ items: Array<{ id: string; content: string }> }>('/api/web/messages');
    expect(chat.body.items.find((i) => i.id === ids.message)?.content).toBe('alice asks');
  }

  // public routes (a single sign-on provider's id) name no one's resource: the route-auth matrix covers them
  it("every user route that takes an id answers another user's id with 404 and changes nothing", async () => {
    const withIds = routes().filter((r) => r.auth === 'user' && /\{(?!source\})[^}]+\}/.test(r.path));
    expect(withIds.length).toBeGreaterThanOrEqual(Object.keys(FIXTURES).length);
    const results: string[] = [];
    for (const r of withIds) {
      const key = `${r.method} ${r.path}`;
      const fx = FIXTURES[key];
      if (!fx) throw new Error(`no authorization fixture for ${key}: add one to FIXTURES`);
      const url = r.path.replace('{source}', 'web').replace(/\{[^}]+\}/, fx.id()) + (fx.query ?? '');
      const res = await bob.request(r.method.toUpperCase(), url, fx.body);
      results.push(`${key} → ${res.status}`);
    }
    expect(results).toEqual(withIds.map((r) => `${r.method} ${r.path} → 404`));
    // ids in bodies and queries
    expect((await bob.post('/api/approval/bypasses', { session_id: aliceSession, scope: 'all' })).status).toBe(404);
    expect(
      (await bob.post('/api/approval/rules/test', { tool_name: 'execute_cmd', session_id: aliceSession })).status,
    ).toBe(404);
    const audit = await bob.get<{ items: unknown[] }>(`/api/approval/audit?session_id=${aliceSession}`);
    expect(audit).toMatchObject({ status: 200, body: { items: [], has_more: false } });
    const bp = await bob.get<{ items: unknown[] }>(`/api/approval/bypasses?session_id=${aliceSession}`);
    expect(bp.body.items).toEqual([]);
    expect((await bob.get<{ approvals: unknown[] }>('/api/inbox')).body.approvals).toEqual([]);
    expect((await bob.get<{ items: unknown[] }>('/api/mcp/servers')).body.items).toEqual([]);
    expect((await bob.get<{ items: unknown[] }>('/api/cron/jobs')).body.items).toEqual([]);
    expect((await bob.get<{ items: unknown[] }>(`/api/cron/runs?job_id=${ids.cronJob}`)).body.items).toEqual([]);
    await aliceUnchanged();
  });

  it("every WS message that takes an id answers another user's id with not_found and changes nothing", async () => {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: bob.token });
    await ws.waitForType('turn_running');
    const frames = [
      { type: 'approve_tool', request_id: ids.request, bypass_secs: 0 },
      { type: 'reject_tool', request_id: ids.request, note: 'no' },
      { type: 'answer_question', request_id: ids.question, answer: 'dev' },
      { type: 'resume', session_id: aliceSession, last_seq: 0 },
    ];
    for (const f of frames) ws.send(f);
    await ws.waitFor(() => ws.frames.filter((f) => f.type === 'error').length >= frames.length);
    // frames are answered concurrently: compare without order
    const errors = ws.frames.filter((f) => f.type === 'error').map((f) => `${String(f.code)} ${String(f.request_id)}`);
    expect(errors.sort()).toEqual(
      [
        `not_found ${ids.request}`,
        `not_found ${ids.request}`,
        `not_found ${ids.question}`,
        'not_found undefined',
      ].sort(),
    );
    ws.close();
    await aliceUnchanged();
  });

  it('the running gateway process: another spelling of an admin route is no way in (the full matrix: test/integration/gateway-route-auth.spec.ts)', async () => {
    const count = async () => (await db.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM users`))[0].n;
    const db = await testDb();
    try {
      const before = await count();
      const raw = (method: string, path: string, token?: string) =>
        new Promise<number>((resolve, reject) => {
          const body =
            method === 'POST'
              ? JSON.stringify({ email: `x-${randomUUID()}@evil.test`, password: 'attacker pw 1', role: 'admin' })
              : '';
          const url = new URL(stack.gatewayUrl);
          const req = httpRequest(
            {
              host: url.hostname,
              port: url.port,
              method,
              path,
              headers: {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
                ...(token ? { authorization: `Bearer ${token}` } : {}),
              },
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const results: string[] = [];
      for (const path of [
        '/API/admin/users',
        '/Api/Admin/Users',
        '//api/admin/users',
        '/api/./admin/users',
        '/api/%61dmin/users',
        '/api/admin/users/',
        '/api/admin/users;x',
      ]) {
        for (const method of ['GET', 'POST']) {
          for (const token of [undefined, bob.token]) {
            const status = await raw(method, path, token);
            if (![401, 403, 404].includes(status))
              results.push(`${method} ${path} ${token ? 'bob' : 'anonymous'} → ${status}`);
          }
        }
      }
      expect(results).toEqual([]);
      expect(await raw('GET', '/api/admin/users')).toBe(401);
      expect(await raw('GET', '/api/admin/users', bob.token)).toBe(403);
      expect(await count()).toBe(before);
    } finally {
      await db.destroy();
    }
  });

  it('a non-admin gets 403 on every admin route', async () => {
    const admins = routes().filter((r) => r.auth === 'admin');
    expect(admins.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining([
        'get /api/approval/rules',
        'post /api/approval/rules',
        'patch /api/approval/rules/{id}',
        'delete /api/approval/rules/{id}',
      ]),
    );
    const statuses: string[] = [];
    for (const r of admins) {
      const res = await bob.request(
        r.method.toUpperCase(),
        r.path.replace('{id}', randomUUID()),
        r.method === 'get' ? undefined : {},
      );
      statuses.push(`${r.method} ${r.path} → ${res.status}`);
    }
    expect(statuses).toEqual(admins.map((r) => `${r.method} ${r.path} → 403`));
    expect((await bob.post('/api/approval/rules/test', { tool_name: 'execute_cmd' })).status).toBe(403);
  });

  it("an admin reads another user's conversation read only (recorded); every write stays the owner's", async () => {
    const db = await testDb();
    const reads = async (adminId: string, sessionId: string) =>
      (
        await db.query<Array<{ read: string; owner_user_id: string }>>(
          `SELECT read, owner_user_id FROM admin_session_reads WHERE admin_user_id = $1 AND session_id = $2 ORDER BY id`,
          [adminId, sessionId],
        )
      ).map((r) => `${r.read} of ${r.owner_user_id}`);
    try {
      const summary = await admin.get<{ id: string; owner: { id: string; email: string } }>(
        `/api/admin/sessions/${aliceSession}`,
      );
      expect(summary).toMatchObject({
        status: 200,
        body: { id: aliceSession, owner: { id: alice.user!.id, email: alice.user!.email } },
      });
      const page = await admin.get<{ items: Array<{ id: string; content: string }>; session_id: string }>(
        `/api/admin/sessions/${aliceSession}/messages?limit=10`,
      );
      expect(page.status).toBe(200);
      expect(page.body.session_id).toBe(aliceSession);
      expect(page.body.items.find((i) => i.id === ids.message)?.content).toBe('alice asks');
      // each read recorded: who, whose, which session (the row's `at` is the database's clock)
      expect(await reads(admin.user!.id, aliceSession)).toEqual([
        `session of ${alice.user!.id}`,
        `messages of ${alice.user!.id}`,
      ]);
      // the admin's own conversation read the same way is not another user's: nothing recorded
      const own = (await admin.post<{ session_id: string }>('/api/sessions?source=web')).body.session_id;
      expect((await admin.get(`/api/admin/sessions/${own}`)).status).toBe(200);
      expect((await admin.get(`/api/admin/sessions/${own}/messages`)).status).toBe(200);
      expect(await reads(admin.user!.id, own)).toEqual([]);

      // every route that writes to or acts on a conversation stays its owner's: 404 for the admin
      const writes: Array<[string, string, unknown?]> = [
        ['GET', `/api/sessions/${aliceSession}`],
        ['PATCH', `/api/sessions/${aliceSession}`, { title: 'admin was here' }],
        ['DELETE', `/api/sessions/${aliceSession}`],
        ['POST', `/api/sessions/${aliceSession}/activate`],
        ['GET', `/api/sessions/${aliceSession}/export?format=json`],
        ['PUT', `/api/sessions/${aliceSession}/run-context`, { working_directory: 'admin' }],
        ['POST', `/api/web/messages/${ids.message}/edit`, { content: 'admin', client_message_id: randomUUID() }],
        ['POST', '/api/approval/bypasses', { session_id: aliceSession, scope: 'all' }],
      ];
      const answered: string[] = [];
      for (const [method, path, body] of writes)
        answered.push(`${method} ${path} → ${(await admin.request(method, path, body)).status}`);
      expect(answered).toEqual(writes.map(([method, path]) => `${method} ${path} → 404`));
      const ws = await WsTestClient.connect(stack.gatewayUrl, { token: admin.token });
      await ws.waitForType('turn_running');
      ws.send({ type: 'resume', session_id: aliceSession, last_seq: 0 });
      expect((await ws.waitForType('error')).code).toBe('not_found');
      ws.close();
      // a non-admin with alice's own session id: 403 on both, nothing recorded for him
      expect((await bob.get(`/api/admin/sessions/${aliceSession}`)).status).toBe(403);
      expect((await bob.get(`/api/admin/sessions/${aliceSession}/messages`)).status).toBe(403);
      expect(await reads(bob.user!.id, aliceSession)).toEqual([]);
      await aliceUnchanged();
    } finally {
      await db.destroy();
    }
  });

  it(`admin reads by generated ids (seed ${SEED}): malformed and unknown → 404 for an admin, any id → 403 for a user`, async () => {
    const encodable = (x: string) => {
      try {
        return encodeURIComponent(x);
      } catch {
        return null;
      }
    };
    // a path segment: any string, encoded, or raw escapes a client could send (NUL, padding); each
    // case with what the admin and a user get
    const malformed = fc.oneof(
      fc
        .string({ minLength: 1, maxLength: 60, unit: 'binary' })
        .filter((x) => !Id.safeParse(x).success && x !== '.' && x !== '..')
        .map(encodable)
        .filter((x): x is string => x !== null),
      fc.constantFrom('%00', `${aliceSession}%00`, ` ${aliceSession}`),
    );
    const named = fc.oneof(
      malformed.map((x) => ({ segment: x, admin: 404, user: 403 })),
      fc.uuid({ version: 4 }).map((x) => ({ segment: x, admin: 404, user: 403 })),
      fc.constant({ segment: aliceSession, admin: 200, user: 403 }),
      // escapes that are no UTF-8: the path cannot be read, refused before anyone is asked
      fc.constantFrom('%ff', '%c0%ae').map((x) => ({ segment: x, admin: 400, user: 400 })),
    );
    const wrong: string[] = [];
    await fc.assert(
      fc.asyncProperty(named, fc.boolean(), async ({ segment, admin: forAdmin, user: forUser }, history) => {
        const path = `/api/admin/sessions/${segment}${history ? '/messages' : ''}`;
        const [asAdmin, asUser] = await Promise.all([admin.get(path), bob.get(path)]);
        if (asAdmin.status !== forAdmin) wrong.push(`admin ${path} → ${asAdmin.status}`);
        if (asUser.status !== forUser) wrong.push(`user ${path} → ${asUser.status}`);
        if (asUser.status !== 200 && !JSON.stringify(asUser.body).includes('"code"'))
          wrong.push(`user ${path}: no error code`);
      }),
      { seed: SEED, numRuns: 300 },
    );
    expect(wrong).toEqual([]);
  });

  it('an admin may act: rules CRUD, rule test, resolving and revoking for another user', async () => {
    const created = await admin.post<{ id: string; action: string }>('/api/approval/rules', {
      tool_pattern: 'mcp__evil__*',
      action: 'deny',
      priority: 5,
    });
    expect(created.status).toBe(201);
    expect(
      (await admin.post('/api/approval/rules', { tool_pattern: '@nope', action: 'deny', priority: 5 })).status,
    ).toBe(400);
    const listed = await admin.get<{ items: Array<{ id: string }> }>('/api/approval/rules');
    expect(listed.body.items.map((r) => r.id)).toContain(created.body.id);
    await new Promise((r) => setTimeout(r, 1100));
    const tested = await alice.post<{ decision: string }>('/api/approval/rules/test', {
      tool_name: 'mcp__evil__x',
      session_id: aliceSession,
    });
    expect(tested.body.decision).toBe('deny');
    const patched = await admin.request('PATCH', `/api/approval/rules/${created.body.id}`, { action: 'require' });
    expect(patched).toMatchObject({ status: 200, body: { action: 'require' } });
    expect((await admin.request('DELETE', `/api/approval/rules/${created.body.id}`)).status).toBe(204);
    expect((await admin.request('DELETE', `/api/approval/rules/${created.body.id}`)).status).toBe(404);

    const tools = await alice.get<{ items: Array<{ name: string; origin: string }> }>('/api/approval/tools');
    expect(tools.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'execute_cmd', origin: 'registry' })]),
    );

    const approved = await admin.post<{ status: string }>(`/api/tools/${ids.toolCall}/resolve`, { action: 'approve' });
    expect(approved).toMatchObject({ status: 200, body: { status: 'approved' } });
    const again = await alice.post<{ error: { code: string } }>(`/api/inbox/approvals/${ids.request}/resolve`, {
      action: 'reject',
    });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'conflict' } } });
    expect((await admin.request('DELETE', `/api/approval/bypasses/${ids.bypass}`)).status).toBe(204);
    // both of alice's sockets heard about it
    for (const ws of [aliceWs, aliceCli]) {
      await ws.waitFor((f) => f.type === 'approval_requested' && f.request_id === ids.request);
      await ws.waitFor((f) => f.type === 'approval_resolved' && f.request_id === ids.request && f.approved === true);
    }
    const audit = await alice.get<{ items: Array<{ decision: string; by: string; actor_user_id?: string }> }>(
      `/api/approval/audit?session_id=${aliceSession}`,
    );
    expect(audit.body.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ decision: 'approve', by: 'human', actor_user_id: admin.user!.id }),
      ]),
    );
  });

  it('first answer wins through the gateway: 50 concurrent resolutions → one 200, 49 × 409; answers from WS too', async () => {
    const r = await register({ userId: alice.user!.id, role: 'user' }, aliceSession, 'approval');
    const statuses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        i % 2
          ? alice.post(`/api/inbox/approvals/${r.request_id}/resolve`, { action: 'approve' }).then((x) => x.status)
          : alice.post(`/api/tools/${r.tool_call_id}/resolve`, { action: 'reject', note: 'no' }).then((x) => x.status),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);

    const q = await register({ userId: alice.user!.id, role: 'user' }, aliceSession, 'clarification');
    aliceWs.send({ type: 'answer_question', request_id: q.request_id, answer: 'prod' });
    await aliceWs.waitFor((f) => f.type === 'clarification_resolved' && f.request_id === q.request_id);
    aliceWs.send({ type: 'answer_question', request_id: q.request_id, answer: 'dev' });
    const err = await aliceWs.waitFor((f) => f.type === 'error' && f.request_id === q.request_id);
    expect(err.code).toBe('conflict');
    const answered = await alice.post(`/api/inbox/clarifications/${q.request_id}/resolve`, { answer: 'x' });
    expect(answered.status).toBe(409);
  });

  // Last: it changes alice's things. Each route's statements run under its service's own database
  // role, so a grant that lacks what the route does (an UPDATE or DELETE on a table granted SELECT)
  // answers 5xx to its owner here, whatever it answers a stranger.
  it('every user route that takes an id, asked by its owner with a valid request, never answers 5xx', async () => {
    const withIds = routes().filter((r) => r.auth === 'user' && /\{(?!source\})[^}]+\}/.test(r.path));
    const answered: string[] = [];
    // deletions after every other use of the ids they remove
    const order = (method: string) => (method === 'delete' ? 1 : 0);
    for (const r of [...withIds].sort((a, b) => order(a.method) - order(b.method))) {
      const key = `${r.method} ${r.path}`;
      const fx = FIXTURES[key];
      const url = r.path.replace('{source}', 'web').replace(/\{[^}]+\}/, fx.id()) + (fx.query ?? '');
      const res = await alice.request(r.method.toUpperCase(), url, fx.body);
      answered.push(`${key} → ${res.status >= 500 ? `${res.status} ${JSON.stringify(res.body)}` : 'no 5xx'}`);
    }
    expect(answered).toHaveLength(withIds.length);
    expect(answered.filter((a) => !a.endsWith('no 5xx'))).toEqual([]);
  });
});
