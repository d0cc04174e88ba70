import { randomBytes, randomUUID } from 'node:crypto';
import { PrivateNats, recordAttackSuite } from '@skald/testing';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(180_000);

/** Consecutive failures of one account from one address (OWASP's username + IP pair). */
const MAX_PER_PAIR = 3;
/** Failures from one address, whatever the accounts. */
const MAX_PER_ADDRESS = 6;
/** The account's brute-force ceiling, whatever the addresses: far above the pair's. */
const MAX_PER_ACCOUNT = 12;
/** Password hashes at once per replica, and logins that may wait for one. */
const MAX_HASHES = 2;
const HASH_QUEUE = 3;
const WINDOW_SECS = 60;

interface Reply {
  status: number;
  retryAfter: number;
  body: { error?: { code?: string }; token?: string };
}

/**
 * Login throttling against two in-process gateway replicas sharing Redis (real HTTP, Postgres,
 * NATS, argon2id): the attempt is counted before the password is checked, so a burst of guesses
 * reaches the hash at most the limit's times, whatever the concurrency; the limit is per account
 * and client address, so the owner elsewhere still logs in; each replica hashes a bounded number
 * of passwords at once and refuses the excess (503 + Retry-After) without hashing.
 */
describe('login throttling across replicas (attack)', () => {
  let nats: PrivateNats;
  let gws: InProcessGateway[] = [];
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };
  const metricsToken = randomBytes(24).toString('hex');
  let adminToken = '';

  const post = async (base: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method: path === '/api/auth/password' ? 'PUT' : 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: Number(res.headers.get('retry-after') ?? 0),
      body: (text ? JSON.parse(text) : {}) as Reply['body'],
    };
  };
  const login = (i: number, email: string, password: string, address: string): Promise<Reply> =>
    post(gws[i % gws.length].url, '/api/auth/login', { email, password }, { 'x-forwarded-for': address });
  const address = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;
  const newUser = async (password = 'correct horse battery') => {
    const email = `u-${randomUUID()}@skald.test`;
    const r = await post(
      gws[0].url,
      '/api/admin/users',
      { email, password, role: 'user' },
      {
        authorization: `Bearer ${adminToken}`,
      },
    );
    expect(r.status).toBe(201);
    return { email, password };
  };
  /** Password checks done so far on every replica (the gateways' own counter; absent on a build without it). */
  const checksDone = async (): Promise<number | null> => {
    let total = 0;
    for (const gw of gws) {
      const text = await (
        await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
      ).text();
      const m = /^skald_login_password_checks_total(?:\{[^}]*\})? (\d+)$/m.exec(text);
      if (!m) return null;
      total += Number(m[1]);
    }
    return total;
  };

  beforeAll(async () => {
    nats = await PrivateNats.start();
    const env = gatewayEnv({
      NATS_URL: nats.url,
      SKALD_ADMIN_EMAIL: admin.email,
      SKALD_ADMIN_PASSWORD: admin.password,
      SKALD_TRUST_PROXY: 'loopback',
      SKALD_METRICS_TOKEN: metricsToken,
      SKALD_LOGIN_WINDOW_SECS: String(WINDOW_SECS),
      SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS: String(MAX_PER_PAIR),
      SKALD_LOGIN_MAX_FAILURES_PER_ADDRESS: String(MAX_PER_ADDRESS),
      SKALD_LOGIN_MAX_FAILURES_PER_ACCOUNT: String(MAX_PER_ACCOUNT),
      SKALD_LOGIN_MAX_CONCURRENT_HASHES: String(MAX_HASHES),
      SKALD_LOGIN_HASH_QUEUE: String(HASH_QUEUE),
    });
    gws = [await startGateway(env, `gw-login-a-${process.pid}`), await startGateway(env, `gw-login-b-${process.pid}`)];
    const r = await post(gws[0].url, '/api/auth/login', admin, { 'x-forwarded-for': address() });
    expect(r.status).toBe(200);
    adminToken = r.body.token!;
  });
  afterAll(async () => {
    for (const gw of gws) await gw.close();
    await nats?.destroy();
  });

  it('100 concurrent wrong guesses at one account from one address, then from 100 addresses: at most the limits reach the password check', async () => {
    const { email, password } = await newUser();
    const before = await checksDone();
    const attacker = address();
    const fromOne = await Promise.all(Array.from({ length: 100 }, (_, i) => login(i, email, `guess ${i}`, attacker)));
    const fromMany = await Promise.all(Array.from({ length: 100 }, (_, i) => login(i, email, `guess ${i}`, address())));
    const reached = (rs: Reply[]) => rs.filter((r) => r.status === 401).length;
    const refused = (rs: Reply[]) => rs.filter((r) => r.status === 429 || r.status === 503);
    const after = await checksDone();
    const figures = {
      concurrent_guesses: 200,
      reached_hash: after !== null && before !== null ? after - before : reached(fromOne) + reached(fromMany),
      refused: refused(fromOne).length + refused(fromMany).length,
    };
    console.log(
      `login attack: from one address ${reached(fromOne)} of 100 reached the password check (limit ${MAX_PER_PAIR}), ` +
        `from 100 addresses ${reached(fromMany)} more (ceiling ${MAX_PER_ACCOUNT}); ${figures.refused} refused; ` +
        `password checks counted by the gateways: ${figures.reached_hash}`,
    );
    recordAttackSuite('logins', 'concurrent-guesses', figures);
    // every answer is a wrong password or a refusal with Retry-After
    expect(reached(fromOne) + refused(fromOne).length).toBe(100);
    expect(reached(fromMany) + refused(fromMany).length).toBe(100);
    for (const r of [...refused(fromOne), ...refused(fromMany)]) expect(r.retryAfter).toBeGreaterThanOrEqual(1);
    expect(reached(fromOne)).toBeLessThanOrEqual(MAX_PER_PAIR);
    expect(reached(fromOne) + reached(fromMany)).toBeLessThanOrEqual(MAX_PER_ACCOUNT);
    // the gateways' own count of password checks agrees: nothing hashed for a refused login
    if (after !== null && before !== null) expect(after - before).toBe(reached(fromOne) + reached(fromMany));
    void password;
  });

  it("an attacker guessing until refused locks their own address out of the account, not the owner's", async () => {
    const { email, password } = await newUser();
    const attacker = address();
    let failures = 0;
    let last = await login(0, email, 'wrong password', attacker);
    for (let i = 1; i < 50 && last.status === 401; i++) {
      failures++;
      last = await login(i, email, 'wrong password', attacker);
    }
    expect(last.status).toBe(429);
    expect(last.body.error?.code).toBe('rate_limited');
    expect(failures).toBe(MAX_PER_PAIR);
    // the right password from the attacker's address: refused without a check
    expect((await login(1, email, password, attacker)).status).toBe(429);
    // the owner from another address, on either replica
    expect((await login(0, email, password, address())).status).toBe(200);
    expect((await login(1, email, password, address())).status).toBe(200);
  });

  it('wrong current passwords of PUT /api/auth/password count on the same per-address counter as logins', async () => {
    const { email, password } = await newUser();
    const from = address();
    const token = (await login(0, email, password, from)).body.token!;
    const change = (i: number, current: string) =>
      post(
        gws[i % 2].url,
        '/api/auth/password',
        { current_password: current, new_password: 'new password 123' },
        { authorization: `Bearer ${token}`, 'x-forwarded-for': from },
      );
    for (let i = 0; i < MAX_PER_PAIR; i++) expect((await change(i, 'wrong')).status).toBe(403);
    expect((await change(0, password)).status).toBe(429);
    expect((await login(1, email, password, from)).status).toBe(429);
    expect((await login(1, email, password, address())).status).toBe(200);
  });

  it(`${8 * (MAX_HASHES + HASH_QUEUE)} right logins at once: each replica hashes at most ${MAX_HASHES} at a time, queues ${HASH_QUEUE}, refuses the rest at once (503, not counted)`, async () => {
    const n = 8 * (MAX_HASHES + HASH_QUEUE);
    const users: Array<{ email: string; password: string }> = [];
    for (let i = 0; i < n / 4; i++) users.push(await newUser());
    const logins = Array.from({ length: n }, (_, i) => users[i % users.length]);
    const rs = await Promise.all(logins.map((u, i) => login(i, u.email, u.password, address())));
    const ok = rs.filter((r) => r.status === 200).length;
    const busy = rs.filter((r) => r.status === 503);
    console.log(`hash bound: ${n} logins at once on 2 replicas: ${ok} in, ${busy.length} refused busy`);
    expect(ok + busy.length).toBe(n);
    expect(ok).toBeGreaterThanOrEqual(2 * (MAX_HASHES + HASH_QUEUE));
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.body.error?.code).toBe('unavailable');
      expect(r.retryAfter).toBeGreaterThanOrEqual(1);
    }
    // a refused login was not counted against anyone: each logs in now from the same kind of fresh address
    for (const [i, u] of logins.entries()) {
      if (rs[i].status === 503) expect((await login(i, u.email, u.password, address())).status).toBe(200);
    }
  });
});
