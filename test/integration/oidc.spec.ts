import 'reflect-metadata';
import { createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PrivateNats } from '@skald/testing';
import { testDb } from '../support/db';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';
import { opClient, TestOp } from '../support/oidc-op';
import { SsoBrowser } from '../support/sso-browser';
import { GroupsWorker, startGroupsWorker } from './groups-worker';

jest.setTimeout(120_000);

/**
 * Single sign-on against a real OpenID Provider (oidc-provider, in a child process): each test is an attack on the
 * callback or a rule, and what it must end in. Providers: `open` (no lists, no linking), `strict` (domain and group
 * lists), `link` (links by verified e-mail); all three are clients of the same test provider.
 */
describe('single sign-on against a real OpenID Provider', () => {
  let nats: PrivateNats;
  let op: TestOp;
  let gw: InProcessGateway;
  let db: DataSource;
  let groups: GroupsWorker;
  let base = '';
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };

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
    groups = await startGroupsWorker(nats.url, db);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const client = (id: string) => opClient(base, id);
    op = await TestOp.start([client('open'), client('strict'), client('link')]);
    gw = await startGateway(
      gatewayEnv({
        NATS_URL: nats.url,
        SKALD_PUBLIC_URL: base,
        SKALD_ADMIN_EMAIL: admin.email,
        SKALD_ADMIN_PASSWORD: admin.password,
        SKALD_OIDC_PROVIDERS: JSON.stringify([
          op.provider('open'),
          op.provider('strict', { allowed_domains: ['corp.example'], allowed_groups: ['skald-users'] }),
          op.provider('link', { link_by_verified_email: true }),
        ]),
      }),
      `gw-oidc-${process.pid}`,
      port,
    );
  });

  afterAll(async () => {
    await gw?.close();
    await groups?.close();
    await op?.stop();
    await db?.destroy();
    await nats?.destroy();
  });

  const isCallback = (u: string) => u.startsWith(`${base}/api/auth/oidc/`) && u.includes('/callback');

  /** A browser up to the provider's redirect back to the gateway (the callback URL, not yet called). */
  async function toCallback(provider: string, account: string, returnTo = '/#inbox') {
    await op.next(account);
    const browser = new SsoBrowser();
    const start = await browser.get(
      `${base}/api/auth/oidc/${provider}/start?return_to=${encodeURIComponent(returnTo)}`,
    );
    expect(start.status).toBe(302);
    expect([...browser.cookies(base).keys()].some((k) => k.startsWith('skald_oidc_'))).toBe(true);
    const callback = await browser.follow(start.location!, isCallback);
    return { browser, callback };
  }

  /** Calls the callback; the login page's fragment it leads to. */
  async function land(browser: SsoBrowser, callback: string): Promise<string> {
    const r = await browser.get(callback);
    expect(r.status).toBe(302);
    return new URL(r.location!).hash;
  }

  async function redeem(hash: string) {
    const handoff = /^#oidc=(.+)$/.exec(hash)?.[1];
    expect(handoff).toBeTruthy();
    const res = await fetch(`${base}/api/auth/oidc/redeem`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ handoff }),
    });
    return {
      status: res.status,
      body: (await res.json()) as { token: string; return_to: string; user: { id: string; email: string } },
    };
  }

  async function signIn(provider: string, account: string, returnTo?: string) {
    const { browser, callback } = await toCallback(provider, account, returnTo);
    return land(browser, callback);
  }

  it('signs in: a new account (JIT), the session works, the groups are kept, the handoff is single use', async () => {
    const sub = `ann-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true, groups: ['skald-users', 'ops'] });
    const hash = await signIn('open', sub);
    const first = await redeem(hash);
    expect(first.status).toBe(200);
    expect(first.body.return_to).toBe('/#inbox');
    expect(first.body.user.email).toBe(`${sub}@corp.example`);
    const me = await fetch(`${base}/api/auth/tokens`, { headers: { authorization: `Bearer ${first.body.token}` } });
    expect(me.status).toBe(200);
    expect((await redeem(hash)).status).toBe(401);
    const [identity] = await db.query<Array<{ user_id: string; oidc_groups: string[] }>>(
      `SELECT user_id, oidc_groups FROM user_identities WHERE provider_id = 'open' AND subject = $1`,
      [sub],
    );
    expect(identity).toEqual({ user_id: first.body.user.id, oidc_groups: ['skald-users', 'ops'] });
    const again = await redeem(await signIn('open', sub));
    expect(again.body.user.id).toBe(first.body.user.id);
  });

  it('refuses an e-mail domain or a group off the lists, and an unverified e-mail of the right domain', async () => {
    const out = `bob-${randomUUID()}`;
    await op.account(out, { email: `${out}@elsewhere.example`, email_verified: true, groups: ['skald-users'] });
    expect(await signIn('strict', out)).toBe('#oidc-error=refused_domain');
    const unverified = `eve-${randomUUID()}`;
    await op.account(unverified, {
      email: `${unverified}@corp.example`,
      email_verified: false,
      groups: ['skald-users'],
    });
    expect(await signIn('strict', unverified)).toBe('#oidc-error=refused_domain');
    const nogroup = `cy-${randomUUID()}`;
    await op.account(nogroup, { email: `${nogroup}@corp.example`, email_verified: true, groups: ['sales'] });
    expect(await signIn('strict', nogroup)).toBe('#oidc-error=refused_group');
    const ok = `di-${randomUUID()}`;
    await op.account(ok, { email: `${ok}@corp.example`, email_verified: true, groups: ['skald-users'] });
    expect((await redeem(await signIn('strict', ok))).status).toBe(200);
    const [{ n }] = await db.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM users WHERE email = ANY($1)`, [
      [`${out}@elsewhere.example`, `${unverified}@corp.example`, `${nogroup}@corp.example`],
    ]);
    expect(n).toBe(0);
  });

  it('an expired attempt, a replayed callback and a replayed code are refused', async () => {
    const sub = `fay-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    const late = await toCallback('open', sub);
    await db.query(`UPDATE oidc_flows SET expires_at = now() - interval '1 second'`);
    expect(await land(late.browser, late.callback)).toBe('#oidc-error=expired');

    const { browser, callback } = await toCallback('open', sub);
    expect(await land(browser, callback)).toMatch(/^#oidc=/);
    // the same callback again (its state is used up)
    expect(await land(browser, callback)).toBe('#oidc-error=expired');
    // the used code with a fresh attempt's state and binding: the provider refuses it (used, and another PKCE)
    const fresh = await toCallback('open', sub);
    const replay = new URL(fresh.callback);
    replay.searchParams.set('code', new URL(callback).searchParams.get('code')!);
    expect(await land(fresh.browser, replay.toString())).toBe('#oidc-error=failed');
  });

  it('login CSRF: a callback from a browser that did not start the attempt is refused', async () => {
    const sub = `gus-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    const { callback } = await toCallback('open', sub);
    // the attacker's own finished attempt, delivered to a victim's browser (no binding cookie, or another one)
    expect(await land(new SsoBrowser(), callback)).toBe('#oidc-error=failed');
    const other = await toCallback('open', sub);
    const victim = new SsoBrowser();
    for (const [name, value] of other.browser.cookies(base)) victim.cookies(base).set(name, value.replace(/.$/, 'x'));
    expect(await land(victim, other.callback)).toBe('#oidc-error=failed');
  });

  it('a tampered ID token, a wrong nonce and a wrong issuer are refused', async () => {
    const sub = `hal-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    await op.tamper(true);
    try {
      expect(await signIn('open', sub)).toBe('#oidc-error=failed');
    } finally {
      await op.tamper(false);
    }
    const [{ n }] = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM user_identities WHERE subject IN ($1, 'mallory')`,
      [sub],
    );
    expect(n).toBe(0);

    const nonce = await toCallback('open', sub);
    await db.query(`UPDATE oidc_flows SET nonce = 'another-nonce'`);
    expect(await land(nonce.browser, nonce.callback)).toBe('#oidc-error=failed');

    const iss = await toCallback('open', sub);
    const wrongIss = new URL(iss.callback);
    wrongIss.searchParams.set('iss', 'https://attacker.example');
    expect(await land(iss.browser, wrongIss.toString())).toBe('#oidc-error=failed');
  });

  it('mix-up: an attempt started with one provider is refused at another provider’s redirect URI', async () => {
    const sub = `ida-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true, groups: ['skald-users'] });
    const { browser, callback } = await toCallback('open', sub);
    const elsewhere = callback.replace('/oidc/open/', '/oidc/strict/');
    expect(await land(browser, elsewhere)).toBe('#oidc-error=failed');
  });

  it('links to an existing password account only by a verified e-mail and the provider’s setting', async () => {
    const email = `jo-${randomUUID()}@corp.example`;
    const login = await fetch(`${base}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(admin),
    });
    const adminToken = ((await login.json()) as { token: string }).token;
    const created = await fetch(`${base}/api/admin/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ email, password: 'user password 123', role: 'user' }),
    });
    const userId = ((await created.json()) as { id: string }).id;
    const sub = `jo-${randomUUID()}`;
    await op.account(sub, { email, email_verified: true });
    expect(await signIn('open', sub)).toBe('#oidc-error=email_taken');
    const unverified = `jo2-${randomUUID()}`;
    await op.account(unverified, { email, email_verified: false });
    expect(await signIn('link', unverified)).toBe('#oidc-error=email_taken');
    const linked = await redeem(await signIn('link', sub));
    expect(linked.body.user.id).toBe(userId);
  });

  it('after sign-in the browser goes only to a same-origin path', async () => {
    const sub = `kim-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    for (const hostile of ['//evil.example', '/\\evil.example', 'https://evil.example/', 'javascript:alert(1)']) {
      expect((await redeem(await signIn('open', sub, hostile))).body.return_to).toBe('/');
    }
  });

  it('key rotation: a token signed with a new key is refused for a minute (JWKS refetch cooldown), then accepted', async () => {
    const sub = `lou-${randomUUID()}`;
    await op.account(sub, { email: `${sub}@corp.example`, email_verified: true });
    expect((await redeem(await signIn('open', sub))).status).toBe(200);
    await op.rotate();
    expect(await signIn('open', sub)).toBe('#oidc-error=failed');
    const now = Date.now.bind(Date);
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now() + 61_000);
    try {
      expect((await redeem(await signIn('open', sub))).status).toBe(200);
    } finally {
      spy.mockRestore();
    }
  });

  it('logout: the provider’s end-session page, coming back to the login page', async () => {
    const r = await new SsoBrowser().get(`${base}/api/auth/oidc/open/logout`);
    expect(r.status).toBe(302);
    const to = new URL(r.location!);
    expect(`${to.origin}${to.pathname}`).toBe(`${op.issuer}/session/end`);
    expect(to.searchParams.get('client_id')).toBe('open');
    expect(to.searchParams.get('post_logout_redirect_uri')).toBe(`${base}/`);
    expect((await new SsoBrowser().get(`${base}/api/auth/oidc/nope/logout`)).status).toBe(404);
  });

  it('the login page’s options list the providers and say password login is on', async () => {
    const res = await fetch(`${base}/api/auth/options`);
    expect(await res.json()).toEqual({
      password_login: true,
      providers: [
        { id: 'open', label: 'open' },
        { id: 'strict', label: 'strict' },
        { id: 'link', label: 'link' },
      ],
    });
  });
});
