import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import path from 'node:path';
import { PrivateNats, Stack, type StackProcess } from '@skald/testing';
import { APP_NAMES, type AppName } from '../support/deployment';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(240_000);

const ROOT = path.resolve(__dirname, '../..');

/**
 * `GET /metrics` over real HTTP. `from` is the local address the request leaves from: `127.0.0.2`
 * is a loopback address of the kernel but not one the guard trusts, so it stands for any peer that
 * is not the host itself (a pod, another machine) on every test machine.
 */
function get(
  url: string,
  opts: { bearer?: string; from?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/metrics`,
      {
        localAddress: opts.from,
        headers: { ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}), ...opts.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.end();
  });
}

/**
 * The gateway's `/metrics` over real HTTP from loopback: without a token it is refused unless
 * SKALD_METRICS_TRUST_LOOPBACK=on; with the scrape token it answers either way.
 */
describe('/metrics from a loopback peer', () => {
  let nats: PrivateNats;
  const gws: Record<'unset' | 'off' | 'on', InProcessGateway | null> = { unset: null, off: null, on: null };
  const token = randomBytes(24).toString('hex');

  beforeAll(async () => {
    nats = await PrivateNats.start();
    const env = gatewayEnv({ NATS_URL: nats.url, SKALD_METRICS_TOKEN: token });
    gws.unset = await startGateway(env, `gw-metrics-unset-${process.pid}`);
    gws.off = await startGateway({ ...env, SKALD_METRICS_TRUST_LOOPBACK: 'off' }, `gw-metrics-off-${process.pid}`);
    gws.on = await startGateway({ ...env, SKALD_METRICS_TRUST_LOOPBACK: 'on' }, `gw-metrics-on-${process.pid}`);
  });
  afterAll(async () => {
    for (const gw of Object.values(gws)) await gw?.close();
    await nats?.destroy();
  });

  it('without a token: 403 when the variable is unset or off, 200 when on', async () => {
    expect((await get(gws.unset!.url)).status).toBe(403);
    expect((await get(gws.off!.url)).status).toBe(403);
    expect((await get(gws.off!.url, { bearer: 'not-the-token' })).status).toBe(403);
    const on = await get(gws.on!.url);
    expect(on.status).toBe(200);
    expect(on.text).toMatch(/^# HELP /m);
  });

  it('with the scrape token: 200 either way', async () => {
    for (const gw of [gws.unset!, gws.off!, gws.on!]) expect((await get(gw.url, { bearer: token })).status).toBe(200);
  });
});

/**
 * Every app's `/metrics` (the apps as `test/support/deployment.ts` lists them, built and started as
 * separate processes by the test Stack): one replica of each with SKALD_METRICS_TRUST_LOOPBACK=off,
 * one with `on`, all with the scrape token. Each app's `/metrics` is served by service-kit's
 * OpsModule with one guard; none may answer a peer without the token, and loopback only when
 * trusted.
 */
describe("every app's /metrics", () => {
  let stack: Stack;
  const token = randomBytes(24).toString('hex');
  const replicas: Record<'off' | 'on', Partial<Record<AppName, StackProcess>>> = { off: {}, on: {} };
  let adminToken = '';

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      env: { SKALD_METRICS_TOKEN: token, SKALD_METRICS_TRUST_LOOPBACK: 'off', LOG_LEVEL: 'warn' },
    });
    for (const app of APP_NAMES) {
      replicas.off[app] = stack.byName(app)[0];
      replicas.on[app] = await stack.addReplica(app, { SKALD_METRICS_TRUST_LOOPBACK: 'on' });
    }
    const login = await fetch(`${stack.gatewayUrl}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(stack.admin),
    });
    adminToken = ((await login.json()) as { token: string }).token;
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('covers every app the deployments list, and the Stack starts no other', () => {
    const started = new Set(stack.processes.map((p) => p.name).filter((n) => n !== 'llm-sim'));
    expect([...started].sort()).toEqual([...APP_NAMES].sort());
  });

  it.each(APP_NAMES)('%s: a peer that is not trusted loopback gets 403 without the token', async (app) => {
    for (const trust of ['off', 'on'] as const) {
      const p = replicas[trust][app]!;
      const remote = await get(p.url, { from: '127.0.0.2' });
      expect({ app, trust, status: remote.status }).toEqual({ app, trust, status: 403 });
      // a forwarded-for header naming loopback changes nothing
      const forged = await get(p.url, { from: '127.0.0.2', headers: { 'x-forwarded-for': '127.0.0.1' } });
      expect({ app, trust, status: forged.status }).toEqual({ app, trust, status: 403 });
      // a wrong token, a near miss of the right one
      for (const bearer of ['wrong', token.slice(0, -1), `${token}x`, token.toUpperCase()]) {
        const r = await get(p.url, { from: '127.0.0.2', bearer });
        expect({ app, trust, bearer, status: r.status }).toEqual({ app, trust, bearer, status: 403 });
      }
    }
  });

  it.each(APP_NAMES)('%s: loopback without the token gets 403 unless SKALD_METRICS_TRUST_LOOPBACK=on', async (app) => {
    expect((await get(replicas.off[app]!.url)).status).toBe(403);
    const on = await get(replicas.on[app]!.url);
    expect(on.status).toBe(200);
    expect(on.text).toMatch(/^# HELP /m);
  });

  it.each(APP_NAMES)('%s: the scrape token gets 200 from any peer', async (app) => {
    for (const trust of ['off', 'on'] as const) {
      for (const from of ['127.0.0.2', undefined]) {
        const r = await get(replicas[trust][app]!.url, { from, bearer: token });
        expect({ app, trust, from, status: r.status }).toEqual({ app, trust, from, status: 200 });
        expect(r.text).toMatch(new RegExp(`service="${app}"`));
      }
    }
  });

  it.each(APP_NAMES)("%s: an admin's token opens the gateway's only (the others cannot verify one)", async (app) => {
    const r = await get(replicas.off[app]!.url, { from: '127.0.0.2', bearer: adminToken });
    expect({ app, status: r.status }).toEqual({ app, status: app === 'gateway' ? 200 : 403 });
  });
});
