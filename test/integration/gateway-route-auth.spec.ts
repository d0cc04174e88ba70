import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PrivateNats, recordAttackSuite } from '@skald/testing';
import { ROUTES, RouteDef } from '@skald/contracts';
import { testDb } from '../support/db';
import { Auth, routeTable } from '../support/gateway-routes';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(120_000);

/**
 * The routes outside the route table: the web client (its page, files and service worker), the API document's page
 * and the ops endpoints (all public).
 */
const OUTSIDE_TABLE = [
  'get /',
  'get /assets/:file',
  'get /sw.js',
  'get /docs',
  'get /docs/assets/:file',
  'get /healthz',
  'get /readyz',
  'get /metrics',
];

/** The routes Express actually serves: `method path` for every route layer of its router. */
function expressRoutes(gw: InProcessGateway): Set<string> {
  const server = gw.app.getHttpAdapter().getInstance() as {
    router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> };
  };
  const out = new Set<string>();
  for (const layer of server.router.stack) {
    if (!layer.route) continue;
    for (const m of Object.keys(layer.route.methods)) out.add(`${m} ${layer.route.path}`);
  }
  return out;
}

/** Spellings of one concrete path that a lax router, proxy or guard might treat as the same route. */
function variants(path: string): Array<{ name: string; path: string }> {
  const segs = path.split('/').slice(1);
  const first = segs[0];
  const rest = segs.slice(1).join('/');
  const encodeFirstLetter = (s: string) => s.replace(/[a-z]/i, (c) => `%${c.charCodeAt(0).toString(16)}`);
  const encodeAll = (s: string) => s.replace(/[a-z]/gi, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const mixed = (s: string) => s.replace(/[a-z]/gi, (c, i: number) => (i % 2 ? c.toUpperCase() : c.toLowerCase()));
  const capital = (s: string) => s.replace(/(^|\/)([a-z])/g, (_m, p: string, c: string) => p + c.toUpperCase());
  const v = [
    { name: 'canonical', path },
    { name: 'upper case', path: path.toUpperCase() },
    { name: 'mixed case', path: mixed(path) },
    { name: 'capitalised segments', path: capital(path) },
    { name: 'leading double slash', path: `/${path}` },
    { name: 'inner double slash', path: rest ? `/${first}//${rest}` : `${path}//` },
    { name: 'dot segment', path: `/./${path.slice(1)}` },
    { name: 'inner dot segment', path: rest ? `/${first}/./${rest}` : `${path}/.` },
    { name: 'dot-dot segment', path: `/x/../${path.slice(1)}` },
    { name: 'encoded dot-dot', path: `/x/%2e%2e/${path.slice(1)}` },
    { name: 'percent-encoded letter', path: path.split('/').map(encodeFirstLetter).join('/') },
    { name: 'percent-encoded word', path: `/${encodeAll(first)}${rest ? `/${rest}` : ''}` },
    { name: 'encoded slash', path: rest ? `/${first}%2f${rest}` : `${path}%2f` },
    { name: 'trailing slash', path: `${path}/` },
    { name: 'matrix parameter', path: `${path};x=1` },
    { name: 'matrix parameter inside', path: rest ? `/${first};x=1/${rest}` : `${path};` },
    { name: 'upper case, doubled slash and trailing slash', path: `/${path.toUpperCase()}/` },
  ];
  return v.filter((x) => x.path.length > 0);
}

/** One raw HTTP request: the path goes on the wire exactly as written (no URL normalisation). */
function send(
  base: string,
  method: string,
  path: string,
  token: string | null,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const url = new URL(base);
  const payload = method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('gateway routes: authentication by route metadata, whatever the spelling of the path', () => {
  let nats: PrivateNats;
  let gw: InProcessGateway;
  let db: DataSource;
  let userToken = '';
  let victimId = '';
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };

  /** Everything an unauthorised request could change in the gateway's tables. */
  async function snapshot(): Promise<unknown> {
    const [users] = await db.query<Array<Record<string, unknown>>>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE role = 'admin')::int AS admins,
              md5(string_agg(id || role || disabled::text || token_version::text || password_hash || email, ',' ORDER BY id)) AS digest
         FROM users`,
    );
    const [tokens] = await db.query<Array<Record<string, unknown>>>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE revoked_at IS NOT NULL)::int AS revoked FROM api_tokens`,
    );
    const [tickets] = await db.query<Array<Record<string, unknown>>>(`SELECT count(*)::int AS n FROM ws_tickets`);
    return { users, tokens, tickets };
  }

  beforeAll(async () => {
    nats = await PrivateNats.start();
    db = await testDb();
    gw = await startGateway(
      gatewayEnv({ NATS_URL: nats.url, SKALD_ADMIN_EMAIL: admin.email, SKALD_ADMIN_PASSWORD: admin.password }),
      `gw-route-auth-${process.pid}`,
    );
    const login = async (email: string, password: string) => {
      const r = await send(gw.url, 'POST', '/api/auth/login', null, { email, password });
      expect(r.status).toBe(200);
      return JSON.parse(r.text) as { token: string; user: { id: string } };
    };
    const adminToken = (await login(admin.email, admin.password)).token;
    const email = `user-${randomUUID()}@skald.test`;
    const created = await send(gw.url, 'POST', '/api/admin/users', adminToken, {
      email,
      password: 'user password 123',
      role: 'user',
    });
    expect(created.status).toBe(201);
    const user = await login(email, 'user password 123');
    userToken = user.token;
    victimId = user.user.id;
  });
  afterAll(async () => {
    await gw?.close();
    await db?.destroy();
    await nats?.destroy();
  });

  it('the routes Express serves are the route table of contracts (each handler bound to its entry), with its auth', () => {
    const { routes, controllers } = routeTable(gw);
    const live = expressRoutes(gw);
    expect(routes.length).toBeGreaterThan(40);
    // every controller of the app has routes in the table, and Express serves every one of them
    expect(new Set(routes.map((r) => r.controller))).toEqual(new Set(controllers));
    expect(controllers).toEqual(expect.arrayContaining(['AdminUsersController', 'AuthController', 'OpsController']));
    expect(new Set(routes.map((r) => `${r.method} ${r.path}`))).toEqual(live);
    // every route of the table is served, and every /api route served is one of the table, with its auth
    const table = Object.values(ROUTES as Record<string, RouteDef>);
    const documented = new Map(table.map((r) => [`${r.method} ${r.path}`, r.auth]));
    const served = new Map(
      routes
        .filter((r) => r.path.startsWith('/api/') || r.path.startsWith('/v1/'))
        .map((r) => [`${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`, r.auth]),
    );
    expect(Object.fromEntries(served)).toEqual(Object.fromEntries(documented));
    expect(served.size).toBe(table.length);
    // each /api and /v1 handler is bound to its entry by @Route (the path is spelled in the table only)
    const inTable = (path: string) => path.startsWith('/api/') || path.startsWith('/v1/');
    const unbound = routes.filter((r) => inTable(r.path) && r.route === undefined);
    expect(unbound.map((r) => `${r.method} ${r.path} (${r.controller})`)).toEqual([]);
    for (const r of routes.filter((x) => x.route))
      expect(`${r.method} ${r.path}`).toBe(`${r.route!.method} ${r.route!.path.replace(/\{(\w+)\}/g, ':$1')}`);
    // outside the table: the web client, the API document's page and the ops endpoints, nothing else
    expect(
      routes
        .filter((r) => !inTable(r.path))
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    ).toEqual([...OUTSIDE_TABLE].sort());
    // exactly these are public: login and single sign-on (the login page's options, the redirect to a provider, its
    // callback, the handoff of the session, the provider's logout), a push notification's Approve / Reject (its
    // action token is the credential), the API document, the web client and the ops endpoints
    expect(
      routes
        .filter((r) => r.auth === 'public')
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    ).toEqual(
      [
        'post /api/auth/login',
        'get /api/auth/options',
        'get /api/auth/oidc/:provider/start',
        'get /api/auth/oidc/:provider/callback',
        'post /api/auth/oidc/redeem',
        'get /api/auth/oidc/:provider/logout',
        'post /api/approvals/actions',
        'get /api/docs',
        ...OUTSIDE_TABLE,
      ].sort(),
    );
  });

  it('every protected route × every path variant: 401/403/404 with no token, a bad token, or (admin routes) a user token, and nothing changes', async () => {
    const { routes } = routeTable(gw);
    const before = await snapshot();
    const body = {
      email: `attacker-${randomUUID()}@evil.test`,
      password: 'attacker password',
      role: 'admin',
      disabled: true,
      name: 'attacker',
      current_password: 'x',
      new_password: 'attacker password 2',
    };
    const credentials: Array<{ name: string; token: string | null; for: Auth[] }> = [
      { name: 'no token', token: null, for: ['user', 'admin'] },
      { name: 'bad token', token: 'not-a-token', for: ['user', 'admin'] },
      { name: 'forged API token', token: `skt_${'A'.repeat(43)}`, for: ['user', 'admin'] },
      { name: 'user token', token: userToken, for: ['admin'] },
    ];
    const failures: string[] = [];
    let tried = 0;
    const attacked = routes.filter((r) => r.auth !== 'public');
    expect(attacked.some((r) => r.auth === 'admin')).toBe(true);
    const cases = attacked.flatMap((r) =>
      variants(r.path.replace(/:\w+/g, victimId)).flatMap((v) =>
        credentials.filter((c) => c.for.includes(r.auth)).map((c) => ({ r, v, c })),
      ),
    );
    // a few requests in flight at a time (bounded), in a fixed order of cases
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const { r, v, c } = cases[next++];
        tried++;
        const res = await send(gw.url, r.method.toUpperCase(), v.path, c.token, body);
        const allowed = c.name === 'user token' ? [401, 403, 404] : [401, 404];
        if (!allowed.includes(res.status))
          failures.push(
            `${r.method.toUpperCase()} ${v.path} (${v.name}, ${c.name}) → ${res.status} ${res.text.slice(0, 120)}`,
          );
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    console.log(
      `route auth: ${attacked.length} protected routes × ${variants('/a/b').length} path variants × credentials = ${tried} requests, ${failures.length} let through`,
    );
    recordAttackSuite('routes', 'gateway', {
      routes: attacked.length,
      spellings: variants('/a/b').length,
      requests: tried,
      let_through: failures.length,
    });
    expect(failures).toEqual([]);
    expect(await snapshot()).toEqual(before);
    const [{ n }] = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM users WHERE email LIKE 'attacker-%'`,
    );
    expect(n).toBe(0);
  });

  it('the reported attack, exactly: GET and POST /API/admin/users without a token', async () => {
    const before = await snapshot();
    expect((await send(gw.url, 'GET', '/API/admin/users', null, undefined)).status).toBe(404);
    const post = await send(gw.url, 'POST', '/API/admin/users', null, {
      email: `attacker-${randomUUID()}@evil.test`,
      password: 'attacker password',
      role: 'admin',
    });
    expect(post.status).toBe(404);
    expect((await send(gw.url, 'GET', '/api/admin/users', null, undefined)).status).toBe(401);
    expect(await snapshot()).toEqual(before);
  });

  it('the OpenAI-compatible routes are protected and refuse in OpenAI’s error shape', async () => {
    const { routes } = routeTable(gw);
    const v1 = routes.filter((r) => r.path.startsWith('/v1/')).map((r) => `${r.method} ${r.path}`);
    expect(v1.sort()).toEqual(['get /v1/models', 'post /v1/chat/completions']);
    for (const [method, path] of [
      ['GET', '/v1/models'],
      ['POST', '/v1/chat/completions'],
    ] as const)
      for (const token of [null, 'not-a-token', `skt_${'A'.repeat(43)}`]) {
        const r = await send(gw.url, method, path, token, { model: 'skald/main', messages: [] });
        expect({ path, token, status: r.status }).toEqual({ path, token, status: 401 });
        const body = JSON.parse(r.text) as { error: Record<string, unknown> };
        expect(body.error).toEqual({
          message: body.error.message,
          type: 'authentication_error',
          param: null,
          code: 'invalid_api_key',
        });
        expect(typeof body.error.message).toBe('string');
      }
    // An unknown path under /v1 is a 404 in the same shape.
    const missing = await send(gw.url, 'GET', '/v1/embeddings', userToken, undefined);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text)).toMatchObject({ error: { type: 'invalid_request_error', code: 'not_found' } });
  });

  it('public routes stay reachable at their own spelling', async () => {
    expect((await send(gw.url, 'GET', '/healthz', null, undefined)).status).toBe(200);
    expect((await send(gw.url, 'GET', '/readyz', null, undefined)).status).toBe(200);
    expect((await send(gw.url, 'GET', '/api/docs', null, undefined)).status).toBe(200);
    expect((await send(gw.url, 'GET', '/docs', null, undefined)).status).toBe(200);
    expect((await send(gw.url, 'GET', '/docs/assets/swagger-ui-bundle.js', null, undefined)).status).toBe(200);
    expect((await send(gw.url, 'GET', '/docs/assets/package.json', null, undefined)).status).toBe(404);
    expect((await send(gw.url, 'GET', '/docs/assets/..%2fpackage.json', null, undefined)).status).toBe(404);
    // /metrics has its own guard: loopback is not trusted unless SKALD_METRICS_TRUST_LOOPBACK=on
    // (test/integration/metrics-access.spec.ts), so without a token it is refused, not hidden
    expect((await send(gw.url, 'GET', '/metrics', null, undefined)).status).toBe(403);
  });
});
