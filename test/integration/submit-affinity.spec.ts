/**
 * Carry affinity over the real NATS server (each service its own user, the generated permissions)
 * and the real submit statement: the gateway's hinted worker answers on its own subject; when it
 * stored the message but answered too late (a timeout) the same submit goes to the queue group and
 * the message is still stored once, answered with its one id; when it is gone (no responders) the
 * other worker takes the conversation.
 */
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PrivateNats } from '@skald/testing';
import { Bus, NatsBus } from '@skald/messaging';
import { SubmitAffinity } from '../../apps/gateway/src/sessions/submit-affinity';
import { SubmitService } from '../../apps/session-worker/src/submit/submit.service';
import { InboxRepository } from '../../apps/session-worker/src/submit/inbox.repository';
import { SessionsRepository } from '../../apps/session-worker/src/sessions/sessions.repository';
import { TurnStateRepository } from '../../apps/session-worker/src/sessions/turn-state.repository';
import { LeaseRepository } from '../../apps/session-worker/src/lease/lease.repository';

const log = { warn: () => undefined, error: () => undefined };
const TIMEOUT_MS = 400;
const FALLBACK_TIMEOUT_MS = 10_000;

describe('carry affinity: targeted submits, their fallback, and the submit staying idempotent', () => {
  let nats: PrivateNats;
  let ds: DataSource;
  let gateway: Bus;
  const workers: Array<{ route: string; bus: Bus; answered: string[] }> = [];
  /** Client message ids whose first answer is held past the gateway's timeout (after the message is stored). */
  const slowOnce = new Set<string>();

  const connect = (service: 'gateway' | 'session-worker', name: string, timeoutMs?: number): Promise<Bus> => {
    const env = nats.serviceEnv(service);
    return NatsBus.connect(
      { servers: nats.url, name, user: env.NATS_USER, pass: env.NATS_PASSWORD, requestTimeoutMs: timeoutMs },
      log,
    );
  };

  beforeAll(async () => {
    nats = await PrivateNats.start({ serviceUsers: true });
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
    await ds.initialize();
    const service = new SubmitService(
      new SessionsRepository(ds),
      new InboxRepository(ds),
      { drive: async () => undefined, leaseAsk: () => null, looksAgain: () => false } as never,
      { publish: () => undefined } as never,
      new TurnStateRepository(ds),
      {} as never,
      new LeaseRepository(ds),
    );
    for (const route of ['worker-a-0001', 'worker-b-0002']) {
      const bus = await connect('session-worker', route);
      const w = { route, bus, answered: [] as string[] };
      // as the worker's handler does, but naming itself always (no driver here takes the lease)
      bus.handle(
        'session.submit',
        async (r) => {
          const { leased: _leased, ...reply } = await service.submit({
            actor: r.actor,
            source: r.source,
            clientMessageId: r.client_message_id,
            content: r.content,
            delivery: r.delivery,
            isSynthetic: r.is_synthetic,
          });
          w.answered.push(r.client_message_id);
          if (slowOnce.delete(r.client_message_id)) await new Promise((res) => setTimeout(res, TIMEOUT_MS * 2));
          return { ...reply, worker: route };
        },
        { replyNow: true, route },
      );
      workers.push(w);
    }
    gateway = await connect('gateway', 'gateway-affinity-spec', TIMEOUT_MS);
  });
  afterAll(async () => {
    await gateway?.drain();
    for (const w of workers) await w.bus.drain().catch(() => undefined);
    await ds?.destroy();
    await nats?.destroy();
  });

  const submitter = (affinity: SubmitAffinity, userId: string) => (clientMessageId: string) =>
    affinity.submit(userId, 'web', (to) =>
      gateway.call(
        'session.submit',
        {
          actor: { userId, role: 'user' },
          source: 'web',
          client_message_id: clientMessageId,
          content: clientMessageId,
        },
        // the hinted send times out at TIMEOUT_MS (what the slow worker exceeds); the queue group's
        // fallback may take as long as a loaded machine needs
        to ? { to } : { timeoutMs: FALLBACK_TIMEOUT_MS },
      ),
    );
  const stored = async (userId: string) =>
    (
      await ds.query<Array<{ id: string; client_message_id: string }>>(
        `SELECT id, client_message_id FROM session_inbox WHERE user_id = $1 ORDER BY created_at`,
        [userId],
      )
    ).map((r): [string, string] => [r.client_message_id, r.id]);

  it("a conversation's consecutive submits are answered by the worker that answered its first", async () => {
    const userId = randomUUID();
    const affinity = new SubmitAffinity();
    const submit = submitter(affinity, userId);
    for (const w of workers) w.answered.length = 0;
    const first = await submit('m1');
    for (let i = 2; i <= 6; i++) expect((await submit(`m${i}`)).worker).toBe(first.worker);
    const owner = workers.find((w) => w.route === first.worker)!;
    expect(owner.answered).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    expect(workers.find((w) => w !== owner)!.answered).toEqual([]);
  });

  it('a hinted worker that stored the message but answered too late: the fallback answers with the same id, stored once', async () => {
    const userId = randomUUID();
    const affinity = new SubmitAffinity();
    const submit = submitter(affinity, userId);
    const first = await submit('m1');
    slowOnce.add('m2');
    const r = await submit('m2');
    const rows = await stored(userId);
    expect(rows.map(([c]) => c)).toEqual(['m1', 'm2']);
    expect(r.message_id).toBe(rows[1][1]);
    // what the client sees: the message acknowledged as already stored (its first send was the hinted worker's)
    expect(r.duplicate).toBe(true);
    expect(first.message_id).toBe(rows[0][1]);
  });

  it('a hinted worker that is gone: the next submit goes to the other one, which keeps the conversation', async () => {
    const userId = randomUUID();
    const affinity = new SubmitAffinity();
    const submit = submitter(affinity, userId);
    const first = await submit('m1');
    const gone = workers.find((w) => w.route === first.worker)!;
    const other = workers.find((w) => w !== gone)!;
    await gone.bus.drain();
    const started = Date.now();
    const r = await submit('m2');
    // no responders comes back at once: no wait for the timeout
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
    expect(r.worker).toBe(other.route);
    expect((await submit('m3')).worker).toBe(other.route);
    expect((await stored(userId)).map(([c]) => c)).toEqual(['m1', 'm2', 'm3']);
  });
});
