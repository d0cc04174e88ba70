import { randomBytes, randomUUID } from 'node:crypto';
import pino from 'pino';
import { freePort, recordAttackSuite } from '@skald/testing';
import type { GatewayConfig } from '../config';
import { SocketCap } from './socket-cap';

const log = pino({ level: 'silent' });

/**
 * The per-user socket cap (`SKALD_MAX_SOCKETS_PER_USER`) across gateway replicas, on real Redis:
 * places are taken atomically, freed on close, and a dead replica's places expire with their lease.
 */
describe('socket cap', () => {
  const made: SocketCap[] = [];
  const prefix = `skald-it-${randomBytes(6).toString('hex')}:login:`;
  const make = async (o: Partial<GatewayConfig> = {}) => {
    const c = new SocketCap(
      {
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        SKALD_LOGIN_LIMIT_PREFIX: prefix,
        SKALD_MAX_SOCKETS_PER_USER: 5,
        SKALD_WS_SOCKET_LEASE_MS: 60_000,
        ...o,
      } as GatewayConfig,
      log,
    );
    made.push(c);
    await c.onModuleInit();
    return c;
  };
  afterAll(() => Promise.all(made.map((c) => c.onApplicationShutdown())));

  it('two replicas, 40 concurrent sockets of one user at a cap of 5: exactly 5 places, freed on close', async () => {
    const [a, b] = [await make(), await make()];
    const user = randomUUID();
    const places = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).take(user)));
    const taken = places.filter((p) => p.taken);
    recordAttackSuite('fairness', 'sockets cap', { attempts: 40, accepted: taken.length, cap: 5 });
    expect(taken).toHaveLength(5);
    expect(places.filter((p) => !p.taken).every((p) => !p.taken && p.have === 5)).toBe(true);
    // Another user has their own places.
    expect((await a.take(randomUUID())).taken).toBe(true);
    // A closed socket frees its place (a double release frees one only).
    const first = taken[0];
    if (first.taken) {
      first.release();
      first.release();
    }
    await new Promise((r) => setTimeout(r, 100));
    const again = await Promise.all([a.take(user), b.take(user)]);
    expect(again.filter((p) => p.taken)).toHaveLength(1);
  });

  it("a dead replica's places expire with their lease; a live replica's are renewed", async () => {
    const live = await make({ SKALD_WS_SOCKET_LEASE_MS: 600 });
    const dying = await make({ SKALD_WS_SOCKET_LEASE_MS: 600 });
    const user = randomUUID();
    for (let i = 0; i < 2; i++) expect((await live.take(user)).taken).toBe(true);
    for (let i = 0; i < 3; i++) expect((await dying.take(user)).taken).toBe(true);
    expect((await live.take(user)).taken).toBe(false);
    // The replica dies: no renewal, no release (its Redis connection is just cut).
    clearInterval((dying as unknown as { renewTimer: NodeJS.Timeout }).renewTimer);
    (dying as unknown as { redis: { disconnect(): void } }).redis.disconnect();
    await new Promise((r) => setTimeout(r, 1_500));
    // Three places came back; the live replica's two were renewed and still count.
    const after = await Promise.all(Array.from({ length: 6 }, () => live.take(user)));
    expect(after.filter((p) => p.taken)).toHaveLength(3);
  });

  it('with Redis unreachable it still caps, per replica', async () => {
    const c = await make({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, SKALD_MAX_SOCKETS_PER_USER: 2 });
    const user = randomUUID();
    const places = await Promise.all(Array.from({ length: 6 }, () => c.take(user)));
    expect(places.filter((p) => p.taken)).toHaveLength(2);
  });

  it('presence: a socket on any replica makes the user online; closed or expired, away; unreadable, an error', async () => {
    const a = await make({ SKALD_WS_SOCKET_LEASE_MS: 600 });
    const b = await make({ SKALD_WS_SOCKET_LEASE_MS: 600 });
    const user = randomUUID();
    expect(await a.online(user)).toBe(false);
    const place = await a.take(user);
    expect(place.taken).toBe(true);
    // The other replica holds no socket of the user and reads the shared places.
    expect(await b.online(user)).toBe(true);
    if (place.taken) place.release();
    await new Promise((r) => setTimeout(r, 100));
    expect(await b.online(user)).toBe(false);

    // A replica that dies holding a socket: away once its lease has run out.
    const dying = await make({ SKALD_WS_SOCKET_LEASE_MS: 600 });
    expect((await dying.take(user)).taken).toBe(true);
    clearInterval((dying as unknown as { renewTimer: NodeJS.Timeout }).renewTimer);
    (dying as unknown as { redis: { disconnect(): void } }).redis.disconnect();
    expect(await b.online(user)).toBe(true);
    await new Promise((r) => setTimeout(r, 900));
    expect(await b.online(user)).toBe(false);

    // Without Redis: a socket held here still counts; otherwise the answer is unknown (an error).
    const alone = await make({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    await expect(alone.online(user)).rejects.toThrow(/Redis/);
    expect((await alone.take(user)).taken).toBe(true);
    expect(await alone.online(user)).toBe(true);
  });
});
