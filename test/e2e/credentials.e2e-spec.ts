import { randomBytes, randomUUID, scryptSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { DataSource } from 'typeorm';
import { ApiClient, Stack, UpgradeRefused, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

const WINDOW_SECS = 2;
/** Consecutive failures of one account from one address (OWASP's username + IP pair). */
const MAX_PER_PAIR = 3;
/** Failures from one address, whatever the accounts. */
const MAX_PER_ADDRESS = 6;
/** The account's brute-force ceiling, whatever the addresses: far above the pair's. */
const MAX_PER_ACCOUNT = 12;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Credentials across gateway replicas: login throttling shared through Redis (per account and
 * address, per address, and an account ceiling; the concurrent attack is
 * test/integration/login-throttle.spec.ts), argon2id with
 * rehash of legacy hashes, and revocation (disable, password change, role change, own password
 * change, API token revoke) reaching tokens, tickets and open sockets on every replica within
 * 2 s; a revocation whose broadcast never came is caught by the sockets' periodic re-validation.
 */
describe('credentials across gateway replicas', () => {
  let stack: Stack;
  let db: DataSource;
  let admin: ApiClient;
  let a: string;
  let b: string;

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      replicas: { gateway: 2 },
      perApp: {
        gateway: {
          SKALD_LOGIN_WINDOW_SECS: String(WINDOW_SECS),
          SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS: String(MAX_PER_PAIR),
          SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT: String(MAX_PER_ACCOUNT),
          SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS: String(MAX_PER_ADDRESS),
          // the tests name their client address in X-Forwarded-For, as a reverse proxy on loopback would
          SKALD_TRUST_PROXY: 'loopback',
          // long: the broadcast alone must end sockets within 2 s (the periodic check is tested apart)
          SKALD_WS_REVALIDATE_SECS: '3600',
        },
      },
    });
    [a, b] = stack.byName('gateway').map((p) => p.url);
    db = await testDb();
    admin = await ApiClient.login(a, stack.admin.email, stack.admin.password);
  });
  afterAll(async () => {
    await stack?.stop();
    if (db) await assertInvariantsAndClose(db);
  });

  const login = (base: string, email: string, password: string, address: string) =>
    new ApiClient(base).request('POST', '/api/auth/login', { email, password }, { 'x-forwarded-for': address });
  const newUser = async (password = 'correct horse battery') => {
    const email = `u-${randomUUID()}@skald.test`;
    const user = await admin.createUser(email, password);
    return { email, password, user };
  };
  const address = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

  describe('login throttling', () => {
    it("an attacker guessing until refused locks their own address out of the account, not the owner's", async () => {
      const { email, password } = await newUser();
      const attacker = address();
      let failures = 0;
      let last = await login(a, email, 'wrong password', attacker);
      for (let i = 1; i < 50 && last.status === 401; i++) {
        failures++;
        last = await login(i % 2 ? b : a, email, 'wrong password', attacker);
      }
      expect(last.status).toBe(429);
      expect(failures).toBe(MAX_PER_PAIR);
      // the right password from the attacker's address: still refused, without a password check
      expect((await login(b, email, password, attacker)).status).toBe(429);
      // the owner from another address, on either replica
      expect((await login(a, email, password, address())).status).toBe(200);
      expect((await login(b, email, password, address())).status).toBe(200);
      // and after the window the attacker's address may try again
      await sleep(WINDOW_SECS * 1000 + 200);
      expect((await login(a, email, 'wrong password', attacker)).status).toBe(401);
    });

    it("the account's ceiling locks every address on both replicas (429 + Retry-After) until the window ends", async () => {
      const { email, password } = await newUser();
      for (let i = 0; i < MAX_PER_ACCOUNT; i++) {
        expect((await login(i % 2 ? b : a, email, 'wrong password', address())).status).toBe(401);
      }
      for (const base of [a, b]) {
        const locked = await login(base, email, password, address());
        expect(locked.status).toBe(429);
        expect(locked.body).toMatchObject({ error: { code: 'rate_limited' } });
        const retry = Number(locked.headers.get('retry-after'));
        expect(retry).toBeGreaterThanOrEqual(1);
        expect(retry).toBeLessThanOrEqual(WINDOW_SECS);
      }
      const started = Date.now();
      let ok = await login(b, email, password, address());
      while (ok.status === 429 && Date.now() - started < (WINDOW_SECS + 2) * 1000) {
        await sleep(Number(ok.headers.get('retry-after')) * 1000);
        ok = await login(b, email, password, address());
      }
      expect(ok.status).toBe(200);
    });

    it('limits one address across accounts and replicas, while other addresses still log in', async () => {
      const { email, password } = await newUser();
      const attacker = address();
      for (let i = 0; i < MAX_PER_ADDRESS; i++) {
        const r = await login(i % 2 ? b : a, `nobody-${i}-${randomUUID()}@skald.test`, 'guess', attacker);
        expect(r.status).toBe(401);
      }
      const blocked = await login(a, email, password, attacker);
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await login(b, email, password, address())).status).toBe(200);
    });

    it('throttles wrong current passwords of PUT /api/auth/password like logins', async () => {
      const { email, password } = await newUser();
      const client = await ApiClient.login(a, email, password);
      const from = address();
      // malformed: named, and not counted as a failure
      const short = await client.request('PUT', '/api/auth/password', {
        current_password: password,
        new_password: 'short',
      });
      expect(short).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'new_password' } } });
      for (let i = 0; i < MAX_PER_PAIR; i++) {
        const r = await client.request(
          'PUT',
          '/api/auth/password',
          { current_password: 'wrong', new_password: 'new password 123' },
          { 'x-forwarded-for': from },
        );
        expect(r).toMatchObject({ status: 403, body: { error: { code: 'forbidden', field: 'current_password' } } });
      }
      const r = await client.request(
        'PUT',
        '/api/auth/password',
        { current_password: password, new_password: 'new password 123' },
        { 'x-forwarded-for': from },
      );
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      // the same counter as logins: that address may not log in to the account either, another may
      expect((await login(b, email, password, from)).status).toBe(429);
      expect((await login(b, email, password, address())).status).toBe(200);
    });
  });

  describe('password hashing', () => {
    it('stores argon2id at OWASP parameters, and upgrades a legacy scrypt N=16384 hash at a successful login', async () => {
      const { email, user } = await newUser('first password 1');
      const [{ password_hash: fresh }] = await db.query<Array<{ password_hash: string }>>(
        `SELECT password_hash FROM users WHERE id = $1`,
        [user.user!.id],
      );
      expect(fresh).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);

      const salt = randomBytes(16);
      const legacy = `scrypt$16384$8$1$${salt.toString('base64url')}$${scryptSync('legacy password 1', salt, 32, { N: 16384, r: 8, p: 1 }).toString('base64url')}`;
      await db.query(`UPDATE users SET password_hash = $2 WHERE id = $1`, [user.user!.id, legacy]);
      const stored = async () =>
        (
          await db.query<Array<{ password_hash: string; token_version: number }>>(
            `SELECT password_hash, token_version FROM users WHERE id = $1`,
            [user.user!.id],
          )
        )[0];
      const before = await stored();
      expect((await login(b, email, 'wrong password', address())).status).toBe(401);
      expect((await stored()).password_hash).toBe(legacy);
      const ok = await login(b, email, 'legacy password 1', address());
      expect(ok.status).toBe(200);
      const after = await stored();
      expect(after.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      // transparent: no credential ended
      expect(after.token_version).toBe(before.token_version);
      expect((await login(a, email, 'legacy password 1', address())).status).toBe(200);
    });
  });

  describe('revocation reaches every replica within 2 s', () => {
    /** A user with a JWT, an API token, sockets on both replicas (by header and by ticket) and an unredeemed ticket. */
    async function holdings() {
      const { email, password, user } = await newUser();
      const jwt = (await ApiClient.login(a, email, password)).token!;
      const apiToken = (await user.post<{ token: string }>('/api/auth/tokens', { name: 'cli' })).body.token;
      const ticketFor = async (base: string, token: string) =>
        (await new ApiClient(base, token).post<{ ticket: string }>('/api/auth/ws-ticket')).body.ticket;
      const sockets = {
        'jwt on A': await WsTestClient.connect(a, { token: jwt }),
        'API token on B': await WsTestClient.connect(b, { token: apiToken, source: 'cli' }),
        'ticket (from A) on B': await WsTestClient.connect(b, { ticket: await ticketFor(a, jwt) }),
        'ticket (from an API token) on A': await WsTestClient.connect(a, {
          ticket: await ticketFor(b, apiToken),
          source: 'cli',
        }),
      };
      for (const ws of Object.values(sockets)) await ws.waitForType('turn_running');
      const unredeemed = await ticketFor(a, jwt);
      return { email, password, user, jwt, apiToken, sockets, unredeemed };
    }

    async function expectAllEnded(h: Awaited<ReturnType<typeof holdings>>, changedAt: number): Promise<void> {
      const closes = await Promise.all(
        Object.entries(h.sockets).map(async ([name, ws]) => `${name}: ${await ws.closed(2_000)} after ≤ 2 s`),
      );
      expect(Date.now() - changedAt).toBeLessThan(2_500);
      expect(closes).toEqual(Object.keys(h.sockets).map((name) => `${name}: 4401 after ≤ 2 s`));
      for (const base of [a, b]) {
        expect((await new ApiClient(base, h.jwt).get('/api/sessions')).status).toBe(401);
        expect((await new ApiClient(base, h.apiToken).get('/api/sessions')).status).toBe(401);
      }
      await expect(WsTestClient.connect(b, { ticket: h.unredeemed })).rejects.toMatchObject({ status: 401 });
      await expect(WsTestClient.connect(a, { token: h.jwt })).rejects.toBeInstanceOf(UpgradeRefused);
      const [{ live }] = await db.query<Array<{ live: number }>>(
        `SELECT count(*)::int AS live FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL`,
        [h.user.user!.id],
      );
      expect(live).toBe(0);
    }

    it('disabling a user', async () => {
      const h = await holdings();
      const at = Date.now();
      expect((await admin.request('PATCH', `/api/admin/users/${h.user.user!.id}`, { disabled: true })).status).toBe(
        200,
      );
      await expectAllEnded(h, at);
      expect((await login(b, h.email, h.password, address())).status).toBe(401);
    });

    it('an admin changing the password', async () => {
      const h = await holdings();
      const at = Date.now();
      const r = await admin.request('PATCH', `/api/admin/users/${h.user.user!.id}`, { password: 'brand new pass 1' });
      expect(r.status).toBe(200);
      await expectAllEnded(h, at);
      expect((await login(b, h.email, h.password, address())).status).toBe(401);
      expect((await login(b, h.email, 'brand new pass 1', address())).status).toBe(200);
    });

    it('changing the role', async () => {
      const h = await holdings();
      const at = Date.now();
      expect((await admin.request('PATCH', `/api/admin/users/${h.user.user!.id}`, { role: 'admin' })).status).toBe(200);
      await expectAllEnded(h, at);
      const again = await login(a, h.email, h.password, address());
      expect(again).toMatchObject({ status: 200, body: { user: { role: 'admin' } } });
    });

    it('the user changing their own password (PUT /api/auth/password, on replica B)', async () => {
      const h = await holdings();
      const at = Date.now();
      const r = await new ApiClient(b, h.jwt).request('PUT', '/api/auth/password', {
        current_password: h.password,
        new_password: 'my own new pass 1',
      });
      expect(r.status).toBe(204);
      await expectAllEnded(h, at);
      expect((await login(a, h.email, h.password, address())).status).toBe(401);
      expect((await login(a, h.email, 'my own new pass 1', address())).status).toBe(200);
    });

    it('revoking one API token closes the sockets opened with it (and tickets issued by it), not the others', async () => {
      const h = await holdings();
      const list = await h.user.get<{ items: Array<{ id: string }> }>('/api/auth/tokens');
      expect((await h.user.request('DELETE', `/api/auth/tokens/${list.body.items[0].id}`)).status).toBe(204);
      expect(await h.sockets['API token on B'].closed(2_000)).toBe(4401);
      expect(await h.sockets['ticket (from an API token) on A'].closed(2_000)).toBe(4401);
      await sleep(300);
      expect(h.sockets['jwt on A'].closeCode).toBeNull();
      expect(h.sockets['ticket (from A) on B'].closeCode).toBeNull();
      for (const ws of Object.values(h.sockets)) ws.close();
    });
  });

  it('a socket opened with a ticket ends when the JWT that asked for the ticket expires', async () => {
    const { user } = await newUser();
    const [{ token_version: tv }] = await db.query<Array<{ token_version: number }>>(
      `SELECT token_version FROM users WHERE id = $1`,
      [user.user!.id],
    );
    // a session JWT as the gateway signs it (its session row first), expiring in 2 s
    const sid = randomUUID();
    await db.query(`INSERT INTO login_sessions (id, user_id, expires_at) VALUES ($1, $2, now() + interval '1 hour')`, [
      sid,
      user.user!.id,
    ]);
    const shortJwt = await new SignJWT({ role: 'user', tv, sid })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user.user!.id)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + 2)
      .setIssuer('skald')
      .sign(new TextEncoder().encode(stack.env.SKALD_JWT_SECRET));
    const ticket = (await new ApiClient(b, shortJwt).post<{ ticket: string }>('/api/auth/ws-ticket')).body.ticket;
    const ws = await WsTestClient.connect(a, { ticket });
    await ws.waitForType('turn_running');
    expect(await ws.closed(4_000)).toBe(4401);
  });

  it('a revocation whose broadcast was lost is caught by the periodic re-validation (SKALD_WS_REVALIDATE_SECS)', async () => {
    const checking = await stack.addReplica('gateway', { SKALD_WS_REVALIDATE_SECS: '0.5' });
    const { email, password, user } = await newUser();
    const jwt = (await ApiClient.login(a, email, password)).token!;
    const ticket = (await new ApiClient(a, jwt).post<{ ticket: string }>('/api/auth/ws-ticket')).body.ticket;
    const onChecking = await WsTestClient.connect(checking.url, { ticket });
    const onA = await WsTestClient.connect(a, { token: jwt });
    await onChecking.waitForType('turn_running');
    await onA.waitForType('turn_running');
    // the revocation is committed, but no replica is told (as if the NATS message were lost)
    await db.query(`UPDATE users SET token_version = token_version + 1 WHERE id = $1`, [user.user!.id]);
    expect(await onChecking.closed(1_500)).toBe(4401);
    // the replica checking hourly still has it open: only the periodic check closed the other one
    expect(onA.closeCode).toBeNull();
    onA.close();
  });
});
