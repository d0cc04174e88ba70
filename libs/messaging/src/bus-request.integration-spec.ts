/**
 * Bus requests over the real NATS server, through the Bus's own reply mux, as the services log in
 * (each its own NATS user, allowed only its own inbox): concurrent requests on one subject each
 * get their own reply; no responders, a timeout, a malformed reply and a payload over the server's
 * limit each surface as a clear BusRequestError; a reply after the timeout is dropped; and nothing
 * is left waiting afterwards.
 */
import { randomUUID } from 'node:crypto';
import { PrivateNats } from '@skald/testing';
import { createInbox } from 'nats';
import { NatsBus, BusRequestError, RemoteError } from './bus';
import { MuxRequestError, ReplyMux } from './reply-mux';

const log = { warn: () => undefined, error: () => undefined };
const waiting = (bus: NatsBus): number => (bus as unknown as { replies: { size: number } }).replies.size;
const actor = () => ({ userId: randomUUID(), role: 'user' as const });

describe('NatsBus requests (own reply mux)', () => {
  let nats: PrivateNats;
  let gateway: NatsBus;
  let worker: NatsBus;
  const connect = (service: 'gateway' | 'session-worker'): Promise<NatsBus> => {
    const env = nats.serviceEnv(service);
    return NatsBus.connect(
      { servers: nats.url, name: `bus-request-spec-${service}`, user: env.NATS_USER, pass: env.NATS_PASSWORD },
      log,
    );
  };

  beforeAll(async () => {
    nats = await PrivateNats.start({ serviceUsers: true });
    gateway = await connect('gateway');
    worker = await connect('session-worker');
  });
  afterAll(async () => {
    await gateway?.drain();
    await worker?.drain();
    await nats?.destroy();
  });

  it('no responders is reported as such, at once (not after the timeout)', async () => {
    const t0 = Date.now();
    const err = await gateway
      .request('session.active', { actor: actor(), source: 'web', create_new: false }, { timeoutMs: 5_000 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusRequestError);
    expect((err as BusRequestError).code).toBe('no_responders');
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(waiting(gateway)).toBe(0);
  });

  it('500 concurrent requests on one subject: each gets its own reply, answered out of order', async () => {
    const delays = new Map<string, number>();
    worker.handle('session.active', async (req) => {
      await new Promise((r) => setTimeout(r, delays.get(req.actor.userId) ?? 0));
      return { session_id: req.actor.userId, created: req.create_new };
    });
    await worker.nc.flush();
    const actors = Array.from({ length: 500 }, (_, i) => {
      const a = actor();
      delays.set(a.userId, (i * 7919) % 40);
      return a;
    });
    const replies = await Promise.all(
      actors.map((a, i) => gateway.call('session.active', { actor: a, source: 'web', create_new: i % 2 === 0 })),
    );
    expect(replies).toEqual(actors.map((a, i) => ({ session_id: a.userId, created: i % 2 === 0 })));
    expect(waiting(gateway)).toBe(0);
  });

  it('a handler error comes back as a RemoteError with its code', async () => {
    worker.handle('session.get', async () => {
      throw new RemoteError({ code: 'not_found', message: 'no such session' });
    });
    await worker.nc.flush();
    await expect(gateway.call('session.get', { actor: actor(), session_id: randomUUID() })).rejects.toMatchObject({
      name: 'RemoteError',
      body: { code: 'not_found' },
    });
  });

  it('a timeout is reported as such, and the reply that comes later is dropped', async () => {
    let answered = 0;
    worker.handle('session.list', async () => {
      await new Promise((r) => setTimeout(r, 300));
      answered++;
      return {} as never; // never read: the request has timed out by then
    });
    await worker.nc.flush();
    const err = await gateway
      .request('session.list', { actor: actor(), page: 1, per_page: 1 }, { timeoutMs: 100 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusRequestError);
    expect((err as BusRequestError).code).toBe('timeout');
    expect(waiting(gateway)).toBe(0);
    for (let i = 0; i < 100 && answered === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(answered).toBe(1);
    await gateway.nc.flush(); // the late reply has reached the gateway's inbox by now, and went nowhere
    expect(waiting(gateway)).toBe(0);
  });

  it('a reply that is not JSON or not the contract is bad_reply', async () => {
    const raw = worker.nc.subscribe('session.rename', {
      queue: 'session-worker',
      callback: (_e, m) => m.respond(new TextEncoder().encode(m.data.length % 2 ? '{not json' : '{"ok":"yes"}')),
    });
    await worker.nc.flush();
    for (const name of ['a', 'ab']) {
      const err = await gateway
        .request('session.rename', { actor: actor(), session_id: randomUUID(), title: name })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BusRequestError);
      expect((err as BusRequestError).code).toBe('bad_reply');
    }
    raw.unsubscribe();
    expect(waiting(gateway)).toBe(0);
  });

  it('a request over the server’s max payload fails at once with a clear error, leaving nothing behind', async () => {
    // no request contract takes a megabyte: the mux itself, on the gateway's connection
    const mux = new ReplyMux(gateway.nc, createInbox('_INBOX.gateway'));
    const huge = new Uint8Array(gateway.nc.info!.max_payload + 1);
    const err = await mux.request('session.active', huge, 5_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MuxRequestError);
    expect((err as MuxRequestError).code).toBe('publish_failed');
    expect((err as MuxRequestError).message).toMatch(/MAX_PAYLOAD/i);
    expect(mux.size).toBe(0);
  });

  it('unchecked (production): the receiver alone parses the request — the same value reaches the handler, the same requests are refused', async () => {
    const env = nats.serviceEnv('gateway');
    const unchecked = await NatsBus.connect(
      {
        servers: nats.url,
        name: 'bus-request-spec-unchecked',
        user: env.NATS_USER,
        pass: env.NATS_PASSWORD,
        checkOutgoing: false,
      },
      log,
    );
    try {
      const got: unknown[] = [];
      worker.handle('session.submit', async (r) => {
        got.push(r);
        return {
          session_id: randomUUID(),
          message_id: randomUUID(),
          client_message_id: r.client_message_id,
          duplicate: false,
        };
      });
      await worker.nc.flush();
      // Defaults left out and a key the contract does not know: applied and stripped by the receiver.
      const a = actor();
      const valid = { actor: a, source: 'web', client_message_id: 'c-1', content: 'hi', extra: 'dropped' };
      await gateway.call('session.submit', valid);
      await unchecked.call('session.submit', valid);
      expect(got).toHaveLength(2);
      expect(got[1]).toEqual(got[0]);
      expect(got[0]).toEqual({
        actor: a,
        source: 'web',
        client_message_id: 'c-1',
        content: 'hi',
        delivery: 'steer',
        is_synthetic: false,
      });
      // What the checking sender refuses before sending, the receiver answers `invalid_input`; the
      // handler sees none of it.
      const invalid: Array<[Record<string, unknown>, string]> = [
        [{ ...valid, content: 7 }, 'content'],
        [{ ...valid, source: 'sessions' }, 'source'],
        [{ ...valid, client_message_id: 'a\u0000b' }, 'client_message_id'],
        [{ ...valid, actor: { userId: 'not-a-uuid', role: 'user' } }, 'actor.userId'],
        [{ ...valid, delivery: 'later' }, 'delivery'],
      ];
      for (const [payload, field] of invalid) {
        await expect(gateway.call('session.submit', payload as never)).rejects.toThrow();
        const err = await unchecked.call('session.submit', payload as never).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(RemoteError);
        expect((err as RemoteError).body).toMatchObject({ code: 'invalid_input', field });
      }
      expect(got).toHaveLength(2);
    } finally {
      await unchecked.drain();
    }
  });

  it('drain ends what still waits with a clear error', async () => {
    const other = await connect('gateway');
    let release = (): void => undefined;
    // answers only after the asking side has drained
    worker.handle('session.export', () => new Promise((r) => (release = () => r({} as never))));
    await worker.nc.flush();
    const pending = other
      .request(
        'session.export',
        { actor: actor(), session_id: randomUUID(), format: 'markdown' },
        { timeoutMs: 30_000 },
      )
      .catch((e: unknown) => e);
    await other.nc.flush();
    await other.drain();
    const err = await pending;
    expect(err).toBeInstanceOf(BusRequestError);
    expect((err as BusRequestError).code).toBe('disconnected');
    expect(waiting(other)).toBe(0);
    release();
  });
});
