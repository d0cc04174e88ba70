/**
 * A request made while the connection to NATS is down (a server restart, a network blip) is sent when
 * the connection is back, and answered then — not lost in nats.js's dropped buffer to wait out its
 * whole timeout. One whose timeout comes first ends with an error that says the connection was lost,
 * and is never sent later. Private NATS server on a spare port, restarted by the spec (serial phase).
 */
import { randomUUID } from 'node:crypto';
import { PrivateNats } from '@skald/testing';
import { NatsBus, BusRequestError } from './bus';

const log = { warn: () => undefined, error: () => undefined };
const actor = () => ({ userId: randomUUID(), role: 'user' as const });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('NatsBus requests across a NATS restart', () => {
  let nats: PrivateNats;
  let gateway: NatsBus;
  let worker: NatsBus;
  const handled: string[] = [];

  beforeAll(async () => {
    nats = await PrivateNats.start();
    gateway = await NatsBus.connect({ servers: nats.url, name: 'reconnect-spec-gateway' }, log);
    worker = await NatsBus.connect({ servers: nats.url, name: 'reconnect-spec-worker' }, log);
    worker.handle('session.rename', async (req) => {
      handled.push(req.title);
      return { id: req.session_id, title: req.title };
    });
    await worker.nc.flush();
  });
  afterAll(async () => {
    await gateway?.drain();
    await worker?.drain();
    await nats?.destroy();
  });

  const rename = (title: string, timeoutMs?: number) =>
    gateway.request('session.rename', { actor: actor(), session_id: randomUUID(), title }, { timeoutMs });
  /** Until the gateway's Bus has seen the loss (its status event), at most 5 s. */
  const untilLost = async () => {
    for (let i = 0; i < 500 && (gateway as unknown as { replies: { connected: boolean } }).replies.connected; i++)
      await sleep(10);
  };

  /** Until `bus` is connected again (its status event), at most 10 s. */
  const untilBack = async (bus: NatsBus) => {
    for (let i = 0; i < 1_000 && !(bus as unknown as { replies: { connected: boolean } }).replies.connected; i++)
      await sleep(10);
  };

  it('a request made while the server is down ends once it is back, well before its timeout', async () => {
    expect((await rename('before')).ok).toBe(true);
    await nats.kill();
    await untilLost();
    const started = Date.now();
    const during = rename('during', 10_000).catch((e: unknown) => e);
    await sleep(300);
    await nats.start();
    const outcome = await during;
    expect(Date.now() - started).toBeLessThan(5_000);
    // answered — or, when the gateway is back before the worker, refused at once as no_responders
    // (what the gateway turns into 503 with Retry-After); never a wait for the whole timeout
    if (outcome instanceof BusRequestError) {
      expect(outcome.code).toBe('no_responders');
      await untilBack(worker);
      await worker.nc.flush();
      expect((await rename('during')).ok).toBe(true);
    } else expect(outcome).toMatchObject({ ok: true, data: { title: 'during' } });
    expect(handled.filter((t) => t === 'during')).toEqual(['during']);
  }, 30_000);

  it('one whose timeout comes first fails saying the connection was lost, and is never sent afterwards', async () => {
    await nats.kill();
    await untilLost();
    const err = await rename('too late', 300).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusRequestError);
    expect((err as BusRequestError).code).toBe('timeout');
    expect((err as Error).message).toMatch(/connection to NATS was lost/);
    await nats.start();
    await untilBack(gateway);
    await untilBack(worker);
    await worker.nc.flush();
    expect((await rename('after', 10_000)).ok).toBe(true);
    expect(handled).not.toContain('too late');
  }, 30_000);
});
