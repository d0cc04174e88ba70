import { randomBytes } from 'node:crypto';
import { PrivateNats } from '@skald/testing';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(120_000);

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

  const get = async (gw: InProcessGateway, bearer?: string) => {
    const res = await fetch(`${gw.url}/metrics`, { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
    return { status: res.status, text: await res.text() };
  };

  it('without a token: 403 when the variable is unset or off, 200 when on', async () => {
    expect((await get(gws.unset!)).status).toBe(403);
    expect((await get(gws.off!)).status).toBe(403);
    expect((await get(gws.off!, 'not-the-token')).status).toBe(403);
    const on = await get(gws.on!);
    expect(on.status).toBe(200);
    expect(on.text).toMatch(/^# HELP /m);
  });

  it('with the scrape token: 200 either way', async () => {
    for (const gw of [gws.unset!, gws.off!, gws.on!]) expect((await get(gw, token)).status).toBe(200);
  });
});
