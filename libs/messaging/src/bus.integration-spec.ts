/**
 * The Bus keeps what it must close at drain, and nothing longer: a subscription that ended (one per
 * watched tool call in the worker, three per user socket in the gateway) is forgotten, so a
 * long-running service does not grow with every call or socket it has seen.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { NatsBus } from './bus';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const log = { warn: () => undefined, error: () => undefined };
const held = (bus: NatsBus): number => (bus as unknown as { subs: Set<unknown> }).subs.size;

describe('NatsBus subscriptions', () => {
  let bus: NatsBus;
  beforeAll(async () => {
    bus = await NatsBus.connect({ servers: NATS_URL, name: `bus-spec-${randomUUID()}` }, log);
  });
  afterAll(async () => {
    await bus.drain();
  });

  it('forgets a subscription once it is unsubscribed, and still delivers to the live ones', async () => {
    const before = held(bus);
    const live = `bus-spec.${randomUUID()}`;
    const got: string[] = [];
    bus.subscribeUnkeyed(live, z.object({ n: z.string() }), (m) => void got.push(m.n));
    for (let i = 0; i < 1_000; i++) {
      const sub = bus.subscribeUnkeyed(`bus-spec.${randomUUID()}`, z.object({}), () => undefined);
      sub.unsubscribe();
    }
    await bus.nc.flush();
    await new Promise((r) => setImmediate(r));
    expect(held(bus)).toBe(before + 1);
    bus.publishUnkeyed(live, z.object({ n: z.string() }), { n: 'still here' });
    await bus.nc.flush();
    for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual(['still here']);
  });
});
