import { expect } from '@jest/globals';
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { connect, NatsConnection, StringCodec } from 'nats';
import type { DataSource } from 'typeorm';
import { PrivateNats } from '@skald/testing';
import { ADMIN_CHAT_ACCESS_OFF } from '../../apps/gateway/src/admin/admin-sessions.service';
import { testDb } from '../support/db';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(120_000);

/**
 * `SKALD_ADMIN_CHAT_ACCESS` as a deployment sets it, on the gateway built as `main.ts` builds it,
 * against the real Postgres: `off` refuses an admin's read with 403 naming the setting before any
 * service is asked; `on` (the default) answers it and records it in `admin_session_reads`. The
 * session worker is a recording double on a private NATS.
 */
describe('SKALD_ADMIN_CHAT_ACCESS on a running gateway', () => {
  let nats: PrivateNats;
  let nc: NatsConnection;
  let db: DataSource;
  const gateways: InProcessGateway[] = [];
  const asked: string[] = [];
  const sc = StringCodec();
  const admin = { email: `admin-${randomUUID()}@skald.test`, password: 'admin password 123' };
  const sessionId = randomUUID();
  let owner = { id: '', email: `owner-${randomUUID()}@skald.test` };

  const summary = () => ({
    id: sessionId,
    source: 'web',
    agent_id: 'main',
    is_ephemeral: false,
    is_interactive: true,
    created_at: '2026-01-01T00:00:00.000Z',
    message_count: 1,
    last_message_at: '2026-01-01T00:00:00.000Z',
    title: 'Owner’s plans',
    is_active: true,
    client: null,
    user_id: owner.id,
  });
  const page = { items: [], has_more: false, session_id: sessionId, resume_seq: 0 };

  async function start(access: 'on' | 'off' | undefined) {
    const gw = await startGateway(
      gatewayEnv({
        NATS_URL: nats.url,
        SKALD_ADMIN_EMAIL: admin.email,
        SKALD_ADMIN_PASSWORD: admin.password,
        ...(access ? { SKALD_ADMIN_CHAT_ACCESS: access } : {}),
      }),
      `gw-chat-access-${access ?? 'default'}-${process.pid}`,
    );
    gateways.push(gw);
    const r = await fetch(`${gw.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(admin),
    });
    expect(r.status).toBe(200);
    const { token, user } = (await r.json()) as { token: string; user: { id: string } };
    const get = async (path: string) => {
      const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    return { gw, token, adminId: user.id, get };
  }

  const reads = async (adminId: string) =>
    (
      await db.query<Array<{ read: string; owner_user_id: string }>>(
        `SELECT read, owner_user_id FROM admin_session_reads WHERE admin_user_id = $1 AND session_id = $2 ORDER BY id`,
        [adminId, sessionId],
      )
    ).map((r) => `${r.read} of ${r.owner_user_id}`);

  beforeAll(async () => {
    nats = await PrivateNats.start();
    nc = await connect({ servers: nats.url });
    for (const subject of ['session.admin.get', 'session.admin.messages'])
      nc.subscribe(subject, {
        callback: (_err, msg) => {
          asked.push(msg.subject);
          const data = msg.subject === 'session.admin.get' ? summary() : page;
          msg.respond(sc.encode(JSON.stringify({ ok: true, data })));
        },
      });
    await nc.flush();
    db = await testDb();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await db?.destroy();
    await nc?.close();
    await nats?.destroy();
  });

  it('off: 403 naming the setting on both routes, no service asked, nothing recorded', async () => {
    const { get, adminId } = await start('off');
    for (const path of [`/api/admin/sessions/${sessionId}`, `/api/admin/sessions/${sessionId}/messages`]) {
      const r = await get(path);
      expect(r).toEqual({ status: 403, body: { error: { code: 'forbidden', message: ADMIN_CHAT_ACCESS_OFF } } });
    }
    expect(ADMIN_CHAT_ACCESS_OFF).toContain('SKALD_ADMIN_CHAT_ACCESS=off');
    expect(asked).toEqual([]);
    expect(await reads(adminId)).toEqual([]);
  });

  it('on by default: the admin reads another user’s conversation, each read recorded with its owner', async () => {
    const { get, adminId, token } = await start(undefined);
    const created = await fetch(`${gateways[gateways.length - 1].url}/api/admin/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: owner.email, password: 'owner password 123' }),
    });
    expect(created.status).toBe(201);
    owner = { ...owner, id: ((await created.json()) as { id: string }).id };

    const s = await get(`/api/admin/sessions/${sessionId}`);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      id: sessionId,
      title: 'Owner’s plans',
      owner: { id: owner.id, email: owner.email },
    });
    expect(s.body).not.toHaveProperty('user_id');
    const m = await get(`/api/admin/sessions/${sessionId}/messages?limit=5`);
    expect(m).toEqual({ status: 200, body: page });
    expect(await reads(adminId)).toEqual([`session of ${owner.id}`, `messages of ${owner.id}`]);
  });
});
