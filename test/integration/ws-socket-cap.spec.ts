import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import WebSocket from 'ws';
import { DataSource } from 'typeorm';
import { Bus } from '@skald/messaging/bus-port';
import { PrivateNats, recordAttackSuite } from '@skald/testing';
import { testDb } from '../support/db';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(120_000);

/**
 * The socket cap through the real gateway (in process, real Postgres / Redis / a private NATS):
 * concurrent sockets of one user past `SKALD_MAX_SOCKETS_PER_USER` get an `error` frame naming the
 * cap and are closed; the others get `hello`. A stand-in answers the two session-worker requests a
 * socket makes on open.
 */
describe('gateway: sockets per user', () => {
  let nats: PrivateNats;
  let db: DataSource;
  let gw: InProcessGateway;
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };
  let token: string;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    db = await testDb();
    gw = await startGateway(
      gatewayEnv({
        NATS_URL: nats.url,
        SKALD_ADMIN_EMAIL: admin.email,
        SKALD_ADMIN_PASSWORD: admin.password,
        SKALD_MAX_SOCKETS_PER_USER: '3',
      }),
      `gw-socket-cap-${process.pid}`,
    );
    const bus = gw.app.get(Bus);
    const sessionId = randomUUID();
    bus.handle('session.active', () => Promise.resolve({ session_id: sessionId, created: false }));
    bus.handle('session.replay', () => Promise.resolve({ events: [], last_seq: 0, running: false }));
    const r = await fetch(`${gw.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(admin),
    });
    expect(r.status).toBe(200);
    token = ((await r.json()) as { token: string }).token;
  });
  afterAll(async () => {
    await gw?.close();
    await db?.destroy();
    await nats?.destroy();
  });

  /** Opens a socket and reports its first frame (and whether it was then closed). */
  const open = () =>
    new Promise<{ ws: WebSocket; first: { type: string; code?: string; message?: string } }>((resolve, reject) => {
      const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/ws?source=web`, {
        headers: { authorization: `Bearer ${token}` },
      });
      ws.once('message', (d: Buffer) => resolve({ ws, first: JSON.parse(d.toString()) as never }));
      ws.once('error', reject);
    });

  it('12 concurrent sockets at a cap of 3: exactly 3 get hello, 9 get rate_limited naming the cap', async () => {
    const got = await Promise.all(Array.from({ length: 12 }, open));
    const hello = got.filter((g) => g.first.type === 'hello');
    const refused = got.filter((g) => g.first.type === 'error');
    recordAttackSuite('fairness', 'sockets cap (gateway)', { attempts: 12, accepted: hello.length, cap: 3 });
    expect(hello).toHaveLength(3);
    expect(refused).toHaveLength(9);
    for (const r of refused) {
      expect(r.first).toEqual({
        type: 'error',
        code: 'rate_limited',
        message: expect.stringMatching(/^per-user limit sockets reached: at most 3 open WebSocket connections/),
      });
    }
    // A closed socket frees its place.
    await new Promise<void>((r) => {
      hello[0].ws.once('close', () => r());
      hello[0].ws.close();
    });
    await new Promise((r) => setTimeout(r, 200));
    const next = await open();
    expect(next.first.type).toBe('hello');
    for (const g of [...got, next]) g.ws.terminate();
  });

  it('a client that resets its connection during the upgrade leaves no place taken', async () => {
    await new Promise((r) => setTimeout(r, 200)); // the previous test's sockets have closed
    const { port } = new URL(gw.url);
    // 40 upgrades reset at 0–11 ms: while the token is read, the place taken, or the answer written
    await Promise.all(
      Array.from(
        { length: 40 },
        (_, i) =>
          new Promise<void>((resolve) => {
            const c = net.connect(Number(port), '127.0.0.1', () => {
              c.write(
                'GET /api/ws?source=web HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
                  'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
                  `Authorization: Bearer ${token}\r\n\r\n`,
              );
              setTimeout(() => c.resetAndDestroy(), i % 12);
            });
            c.on('error', () => undefined);
            c.on('close', () => resolve());
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 500));
    const got = await Promise.all(Array.from({ length: 3 }, open));
    expect(got.map((g) => g.first.type)).toEqual(['hello', 'hello', 'hello']);
    for (const g of got) g.ws.terminate();
  });
});
