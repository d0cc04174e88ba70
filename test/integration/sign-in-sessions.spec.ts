import 'reflect-metadata';
import { createServer } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import Redis from 'ioredis';
import { SignJWT } from 'jose';
import { DataSource } from 'typeorm';
import WebSocket from 'ws';
import { NatsBus } from '@skald/messaging';
import { PrivateNats, recordAttackSuite } from '@skald/testing';
import pino from 'pino';
import { testDb } from '../support/db';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';
import { opClient, TestOp } from '../support/oidc-op';
import { SsoBrowser } from '../support/sso-browser';
import { GroupsWorker, startGroupsWorker } from './groups-worker';

jest.setTimeout(180_000);

const SEED = Number(process.env.FC_SEED ?? 39_2026);
const REVALIDATE_SECS = 1;
const FLOWS_PER_ADDRESS = 5;

/**
 * Sign-in sessions as a trust boundary, against a real OpenID Provider and two gateway replicas sharing Postgres and
 * NATS: the session claim of a JWT (attacked with generated claims), sign-out ending a session on every replica and
 * its sockets, the identity provider's groups synced at each sign-in (fail closed), the throttle on starting a
 * sign-in, and two sign-ins under way in one browser.
 */
describe('sign-in sessions: revocation, groups at each sign-in, start throttle, two tabs', () => {
  let nats: PrivateNats;
  let op: TestOp;
  let gw: InProcessGateway;
  let gw2: InProcessGateway;
  let limited: InProcessGateway;
  let db: DataSource;
  let groups: GroupsWorker | null = null;
  let redis: Redis;
  let env: Record<string, string>;
  let base = '';
  let limitedBase = '';
  let adminToken = '';
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };
  const stubs: Array<{ drain(): Promise<void> }> = [];

  const freePort = () =>
    new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });

  beforeAll(async () => {
    nats = await PrivateNats.start();
    db = await testDb();
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const port = await freePort();
    const limitedPort = await freePort();
    base = `http://127.0.0.1:${port}`;
    limitedBase = `http://127.0.0.1:${limitedPort}`;
    // one client of the provider, with the redirect URIs of both gateways that sign in
    const corp = opClient(base, 'corp');
    op = await TestOp.start([
      { ...corp, redirect_uris: [...corp.redirect_uris, ...opClient(limitedBase, 'corp').redirect_uris] },
    ]);
    groups = await startGroupsWorker(nats.url, db);
    // the worker's answers a socket needs to open (no session worker runs here)
    const stub = await NatsBus.connect(
      { servers: nats.url, name: `ws-stub-${process.pid}` },
      pino({ level: 'silent' }),
    );
    stub.handle('session.active', () => Promise.resolve({ session_id: randomUUID(), created: false }));
    stub.handle('session.replay', () => Promise.resolve({ events: [], last_seq: 0, running: false }));
    stubs.push(stub);
    env = gatewayEnv({
      NATS_URL: nats.url,
      SKALD_PUBLIC_URL: base,
      SKALD_ADMIN_EMAIL: admin.email,
      SKALD_ADMIN_PASSWORD: admin.password,
      SKALD_WS_REVALIDATE_SECS: String(REVALIDATE_SECS),
      SKALD_OIDC_PROVIDERS: JSON.stringify([op.provider('corp')]),
    });
    gw = await startGateway(env, `gw-sessions-a-${process.pid}`, port);
    // a second replica: same key, database and NATS
    gw2 = await startGateway(env, `gw-sessions-b-${process.pid}`);
    limited = await startGateway(
      gatewayEnv({
        NATS_URL: nats.url,
        SKALD_PUBLIC_URL: limitedBase,
        SKALD_TRUST_PROXY: 'loopback',
        SKALD_OIDC_MAX_FLOWS_PER_ADDRESS: String(FLOWS_PER_ADDRESS),
        SKALD_OIDC_PROVIDERS: JSON.stringify([op.provider('corp')]),
      }),
      `gw-sessions-limited-${process.pid}`,
      limitedPort,
    );
    adminToken = (await passwordLogin(admin.email, admin.password)).token;
  });

  afterAll(async () => {
    await limited?.close();
    await gw2?.close();
    await gw?.close();
    await groups?.close();
    for (const s of stubs) await s.drain();
    await op?.stop();
    redis?.disconnect();
    await db?.destroy();
    await nats?.destroy();
  });

  async function passwordLogin(email: string, password: string): Promise<{ token: string; user: { id: string } }> {
    const r = await fetch(`${base}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    expect(r.status).toBe(200);
    return (await r.json()) as { token: string; user: { id: string } };
  }

  async function newUser(): Promise<{ id: string; email: string; password: string }> {
    const u = { email: `u-${randomUUID()}@skald.test`, password: 'user password 123' };
    const r = await call(base, 'POST', '/api/admin/users', adminToken, { ...u, role: 'user' });
    expect(r.status).toBe(201);
    return { ...u, id: ((await r.json()) as { id: string }).id };
  }

  function call(at: string, method: string, path: string, token: string | null, body?: unknown): Promise<Response> {
    return fetch(`${at}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  }

  /** Opens a socket with the token: its first frame's type, or the HTTP status of a refused upgrade. */
  function openSocket(at: string, token: string): Promise<{ ws: WebSocket | null; first: string }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${at.replace('http', 'ws')}/api/ws?source=web`, {
        headers: { authorization: `Bearer ${token}` },
      });
      ws.once('unexpected-response', (_req, res) => resolve({ ws: null, first: String(res.statusCode) }));
      ws.once('message', (d: Buffer) => resolve({ ws, first: (JSON.parse(d.toString()) as { type: string }).type }));
      ws.once('error', reject);
    });
  }

  const closed = (ws: WebSocket): Promise<{ code: number; ms: number }> => {
    const t0 = Date.now();
    return new Promise((resolve) => ws.once('close', (code) => resolve({ code, ms: Date.now() - t0 })));
  };

  const isCallback = (at: string) => (u: string) => u.startsWith(`${at}/api/auth/oidc/`) && u.includes('/callback');

  /** A sign-in through the provider up to its redirect back (not called yet). */
  async function toCallback(browser: SsoBrowser, account: string, at = base) {
    await op.next(account);
    const start = await browser.get(`${at}/api/auth/oidc/corp/start`);
    expect(start.status).toBe(302);
    return browser.follow(start.location!, isCallback(at));
  }

  async function land(browser: SsoBrowser, callback: string): Promise<string> {
    const r = await browser.get(callback);
    expect(r.status).toBe(302);
    return new URL(r.location!).hash;
  }

  async function redeem(hash: string): Promise<{ token: string; user: { id: string } }> {
    const handoff = /^#oidc=(.+)$/.exec(hash)?.[1];
    expect(handoff).toBeTruthy();
    const r = await call(base, 'POST', '/api/auth/oidc/redeem', null, { handoff });
    expect(r.status).toBe(200);
    return (await r.json()) as { token: string; user: { id: string } };
  }

  async function ssoSignIn(account: string): Promise<{ token: string; user: { id: string } }> {
    const browser = new SsoBrowser();
    return redeem(await land(browser, await toCallback(browser, account)));
  }

  /** How many flows under way were started from this address (as throttling counts it: the hash of its key). */
  async function flowsFrom(addressKey: string): Promise<number> {
    const [{ n }] = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM oidc_flows WHERE address_key = $1 AND expires_at > now()`,
      [createHash('sha256').update(addressKey).digest('hex')],
    );
    return n;
  }

  it('a JWT whose session claim is missing, malformed, unknown, ended or another user’s is refused (generated claims)', async () => {
    const key = new TextEncoder().encode(env.SKALD_JWT_SECRET);
    const victim = await newUser();
    const victimSession = await passwordLogin(victim.email, victim.password);
    const attacker = await newUser();
    const attackerSession = await passwordLogin(attacker.email, attacker.password);
    const ended = await passwordLogin(attacker.email, attacker.password);
    expect((await call(base, 'POST', '/api/auth/logout', ended.token)).status).toBe(204);
    const sidOf = (t: string) =>
      (JSON.parse(Buffer.from(t.split('.')[1], 'base64url').toString()) as { sid: string }).sid;
    const [{ token_version: tv }] = await db.query<Array<{ token_version: number }>>(
      `SELECT token_version FROM users WHERE id = $1`,
      [attacker.id],
    );
    const sid = fc.oneof(
      fc.constant(undefined),
      fc.constant(sidOf(victimSession.token)),
      fc.constant(sidOf(ended.token)),
      fc.uuid(),
      fc.string({ maxLength: 80 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.integer(),
      fc.constant(null),
      fc.array(fc.uuid(), { maxLength: 2 }),
      fc.constant({ $ne: null }),
    );
    const route = fc.constantFrom(
      ['GET', '/api/auth/tokens'],
      ['POST', '/api/auth/ws-ticket'],
      ['POST', '/api/auth/logout'],
      ['GET', '/API/AUTH/TOKENS'],
      ['GET', '/api//auth/tokens/'],
      ['WS', '/api/ws'],
    );
    let tried = 0;
    await fc.assert(
      fc.asyncProperty(sid, route, fc.boolean(), async (s, [method, path], onSecond) => {
        const claims: Record<string, unknown> = { role: 'user', tv };
        if (s !== undefined) claims.sid = s;
        const token = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(attacker.id)
          .setIssuedAt()
          .setExpirationTime('1h')
          .setIssuer('skald')
          .sign(key);
        const at = onSecond ? gw2.url : base;
        tried++;
        if (method === 'WS') {
          expect((await openSocket(at, token)).first).toBe('401');
          return;
        }
        const r = await call(at, method, path, token);
        // another spelling of a route may not reach a handler (404): it must never be served
        expect([401, 404]).toContain(r.status);
      }),
      { seed: SEED, numRuns: 300 },
    );
    // the attacker's own live session still works, and the victim's was not ended by any of it
    expect((await call(base, 'GET', '/api/auth/tokens', attackerSession.token)).status).toBe(200);
    expect((await call(base, 'GET', '/api/auth/tokens', victimSession.token)).status).toBe(200);
    recordAttackSuite('identity', 'session claim (gateway)', { tokens: tried, accepted: 0, seed: SEED });
  });

  it('sign-out ends the session on every replica: REST 401, the open sockets closed 4401 within the re-check', async () => {
    const u = await newUser();
    const session = await passwordLogin(u.email, u.password);
    const other = await passwordLogin(u.email, u.password);
    const a = await openSocket(base, session.token);
    const b = await openSocket(gw2.url, session.token);
    expect([a.first, b.first]).toEqual(['hello', 'hello']);
    // a ticket issued before the sign-out is dead with it
    const ticket = (
      (await (await call(gw2.url, 'POST', '/api/auth/ws-ticket', session.token)).json()) as { ticket: string }
    ).ticket;
    const closedA = closed(a.ws!);
    const closedB = closed(b.ws!);
    expect((await call(base, 'POST', '/api/auth/logout', session.token)).status).toBe(204);
    const [ca, cb] = await Promise.all([closedA, closedB]);
    expect([ca.code, cb.code]).toEqual([4401, 4401]);
    expect(Math.max(ca.ms, cb.ms)).toBeLessThan(REVALIDATE_SECS * 1000 + 1500);
    for (const at of [base, gw2.url])
      expect((await call(at, 'GET', '/api/auth/tokens', session.token)).status).toBe(401);
    const byTicket = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${gw2.url.replace('http', 'ws')}/api/ws?source=web&ticket=${ticket}`, {
        headers: { origin: base },
      });
      ws.once('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => resolve(101));
    });
    expect(byTicket).toBe(401);
    // the user's other session lives on
    expect((await call(gw2.url, 'GET', '/api/auth/tokens', other.token)).status).toBe(200);
    recordAttackSuite('identity', 'sign-out', { replicas: 2, sockets_closed: 2, max_close_ms: Math.max(ca.ms, cb.ms) });
  });

  it('a revocation whose broadcast is lost still closes the socket within the periodic re-check', async () => {
    const u = await newUser();
    const session = await passwordLogin(u.email, u.password);
    const s = await openSocket(gw2.url, session.token);
    expect(s.first).toBe('hello');
    const gone = closed(s.ws!);
    // the row deleted behind the gateways' backs: no doorbell rings
    await db.query(`DELETE FROM login_sessions WHERE user_id = $1`, [u.id]);
    const c = await gone;
    expect(c.code).toBe(4401);
    expect(c.ms).toBeLessThan(REVALIDATE_SECS * 1000 * 2 + 1500);
  });

  it('an admin disabling a user still ends their sessions and sockets', async () => {
    const u = await newUser();
    const session = await passwordLogin(u.email, u.password);
    const s = await openSocket(gw2.url, session.token);
    const gone = closed(s.ws!);
    expect((await call(base, 'PATCH', `/api/admin/users/${u.id}`, adminToken, { disabled: true })).status).toBe(200);
    expect((await gone).code).toBe(4401);
    expect((await call(gw2.url, 'GET', '/api/auth/tokens', session.token)).status).toBe(401);
  });

  it('a single sign-on session: sign-out ends it like a password one, and the session row names the provider', async () => {
    const sub = `sso-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    const { token, user } = await ssoSignIn(sub);
    const [row] = await db.query<Array<{ provider_id: string }>>(
      `SELECT provider_id FROM login_sessions WHERE user_id = $1`,
      [user.id],
    );
    expect(row.provider_id).toBe('corp');
    expect((await call(gw2.url, 'POST', '/api/auth/logout', token)).status).toBe(204);
    expect((await call(base, 'GET', '/api/auth/tokens', token)).status).toBe(401);
  });

  it('groups: the claim’s groups at each sign-in, a group the provider drops is left, an admin membership stays', async () => {
    const tag = randomUUID().slice(0, 8);
    const [A, B, C] = [`ops-${tag}`, `research-${tag}`, `admins-pick-${tag}`];
    const sub = `grp-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true, groups: [A, B] });
    const { user } = await ssoSignIn(sub);
    const memberships = async () =>
      (
        await db.query<Array<{ name: string; source: string }>>(
          `SELECT g.name, m.source FROM group_members m JOIN groups g ON g.id = m.group_id
            WHERE m.user_id = $1 ORDER BY g.name, m.source`,
          [user.id],
        )
      ).map((r) => `${r.name}:${r.source}`);
    expect(await memberships()).toEqual([`${A}:idp`, `${B}:idp`]);
    // an admin adds the user to a group of their own making
    const created = await call(base, 'POST', '/api/admin/groups', adminToken, { name: C });
    expect(created.status).toBe(201);
    const groupId = ((await created.json()) as { id: string }).id;
    const added = await call(base, 'POST', `/api/admin/groups/${groupId}/members`, adminToken, {
      add: [user.id],
      remove: [],
    });
    expect(added.status).toBe(200);
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true, groups: [A] });
    await ssoSignIn(sub);
    expect(await memberships()).toEqual([`${C}:admin`, `${A}:idp`].sort());
    // no claim at all (a provider omits it when the user is in no group): every idp membership goes
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    await ssoSignIn(sub);
    expect(await memberships()).toEqual([`${C}:admin`]);
  });

  it('groups fail closed: when they cannot be synced the sign-in is refused, and works once they can', async () => {
    const sub = `down-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true, groups: [`g-${sub}`] });
    await groups!.close();
    groups = null;
    try {
      const browser = new SsoBrowser();
      expect(await land(browser, await toCallback(browser, sub))).toBe('#oidc-error=unavailable');
      const [{ n }] = await db.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM oidc_handoffs h JOIN users u ON u.id = h.user_id WHERE u.email = $1`,
        [`${sub}@corp.example`],
      );
      expect(n).toBe(0);
    } finally {
      groups = await startGroupsWorker(nats.url, db);
    }
    const { user } = await ssoSignIn(sub);
    const [{ n }] = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM group_members WHERE user_id = $1 AND source = 'idp'`,
      [user.id],
    );
    expect(n).toBe(1);
  });

  it('starting sign-ins is throttled per client address: 429 with Retry-After, other addresses free, rows bounded', async () => {
    const start = (xff?: string) =>
      fetch(`${limitedBase}/api/auth/oidc/corp/start`, {
        redirect: 'manual',
        headers: xff ? { 'x-forwarded-for': xff } : {},
      });
    const burst = await Promise.all(Array.from({ length: 40 }, () => start('203.0.113.7')));
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s === 302)).toHaveLength(FLOWS_PER_ADDRESS);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - FLOWS_PER_ADDRESS);
    const refused = burst.find((r) => r.status === 429)!;
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const refusal = ((await refused.json()) as { error: { code: string; message: string } }).error;
    expect(refusal.code).toBe('rate_limited');
    expect(refusal.message).toMatch(/^too many sign-ins started from this address; try again in \d+ s$/);
    // the same /64 is the same address; another address is not affected
    expect((await start('2001:db8:1:2::1')).status).toBe(302);
    expect((await start('2001:db8:1:2:ffff::9')).status).toBe(302);
    expect((await start('198.51.100.9')).status).toBe(302);
    // the per-minute count forgotten (a new minute): the flows under way still hold the address at its cap
    const keys = await redis.keys('*oidc-start:203.0.113.7');
    if (keys.length) await redis.del(...keys);
    const capped = await start('203.0.113.7');
    expect(capped.status).toBe(429);
    expect(((await capped.json()) as { error: { message: string } }).error.message).toMatch(
      /^too many sign-ins under way from this address; try again in \d+ s$/,
    );
    expect(Number(capped.headers.get('retry-after'))).toBeGreaterThan(60);
    expect(await flowsFrom('203.0.113.7')).toBe(FLOWS_PER_ADDRESS);
    expect(await flowsFrom('2001:db8:1:2::/64')).toBe(2);
    recordAttackSuite('fairness', 'sign-in starts per address (gateway)', {
      attempts: 40,
      accepted: FLOWS_PER_ADDRESS,
      cap: FLOWS_PER_ADDRESS,
    });
  });

  it('X-Forwarded-For counts only from a trusted proxy: without one, every spelling is the peer’s address', async () => {
    // gw trusts no proxy: forged headers all count against the peer (127.0.0.1), none against the forged address
    const before = await flowsFrom('127.0.0.1');
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${base}/api/auth/oidc/corp/start`, {
        redirect: 'manual',
        headers: { 'x-forwarded-for': `192.0.2.${i}` },
      });
      expect(r.status).toBe(302);
    }
    expect((await flowsFrom('127.0.0.1')) - before).toBe(3);
    for (let i = 0; i < 3; i++) expect(await flowsFrom(`192.0.2.${i}`)).toBe(0);
  });

  it('two sign-ins started in two tabs of one browser both complete; a foreign binding still fails', async () => {
    const sub = `tabs-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    const browser = new SsoBrowser();
    const first = await toCallback(browser, sub);
    const second = await toCallback(browser, sub);
    expect([...browser.cookies(base).keys()].filter((k) => k.startsWith('skald_oidc_'))).toHaveLength(2);
    expect(await land(browser, first)).toMatch(/^#oidc=/);
    expect(await land(browser, second)).toMatch(/^#oidc=/);
    expect([...browser.cookies(base).keys()].filter((k) => k.startsWith('skald_oidc_'))).toHaveLength(0);
    // login CSRF: the attacker's callback in a victim's browser that holds a binding of its own attempt
    const victim = new SsoBrowser();
    await toCallback(victim, sub);
    const attackers = await toCallback(new SsoBrowser(), sub);
    expect(await land(victim, attackers)).toBe('#oidc-error=failed');
  });
});
