import fc from 'fast-check';
import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { SubmitAffinity } from './submit-affinity';

type Reply = { message_id: string; worker?: string };

/** A fake bus: each route (or the queue group, `undefined`) answers, fails, or is dead. */
function bus(answers: Record<string, (to?: string) => Promise<Reply>>) {
  const sent: Array<string | undefined> = [];
  const send = (to?: string): Promise<Reply> => {
    sent.push(to);
    const a = answers[to ?? 'queue'];
    return a ? a(to) : Promise.reject(new BusRequestError('no_responders', 'session.submit', 'no service answers'));
  };
  return { sent, send };
}
const ok = (worker?: string) => (): Promise<Reply> =>
  Promise.resolve({ message_id: 'm1', ...(worker ? { worker } : {}) });
const fails = (code: BusRequestError['code']) => (): Promise<Reply> =>
  Promise.reject(new BusRequestError(code, 'session.submit', code));

describe('SubmitAffinity (the gateway sends a conversation to the worker holding its history)', () => {
  it('a first submit goes to the queue group; the next one to the worker its reply named', async () => {
    const a = new SubmitAffinity();
    const b = bus({ queue: ok('w-a'), 'w-a': ok('w-a') });
    await a.submit('u1', 'web', b.send);
    await a.submit('u1', 'web', b.send);
    expect(b.sent).toEqual([undefined, 'w-a']);
    // another conversation of the same user, and the same source of another user, have no hint
    await a.submit('u1', 'telegram', b.send);
    await a.submit('u2', 'web', b.send);
    expect(b.sent.slice(2)).toEqual([undefined, undefined]);
  });

  it.each(['no_responders', 'timeout'] as const)(
    'a hinted worker that gives %s: the same submit goes to the queue group, and the hint becomes who answered',
    async (code) => {
      const a = new SubmitAffinity();
      const b = bus({ queue: ok('w-b'), 'w-a': fails(code) });
      await a.submit('u1', 'web', bus({ queue: ok('w-a') }).send);
      const r = await a.submit('u1', 'web', b.send);
      expect(r.message_id).toBe('m1');
      expect(b.sent).toEqual(['w-a', undefined]);
      expect(a.routeOf('u1', 'web')).toBe('w-b');
    },
  );

  it('a dead hinted worker whose fallback names no one: the hint is dropped (no second wait on the dead worker)', async () => {
    const a = new SubmitAffinity();
    await a.submit('u1', 'web', bus({ queue: ok('w-a') }).send);
    const b = bus({ queue: ok() });
    await a.submit('u1', 'web', b.send);
    await a.submit('u1', 'web', b.send);
    expect(b.sent).toEqual(['w-a', undefined, undefined]);
  });

  it('a reply naming something that is not a route (a NATS token) is not remembered: the next submit goes to the queue group', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string(), fc.constantFrom('', 'a.b', 'w-*', '>', 'w a', 'x'.repeat(65), 'w\u0000', 'é')),
        async (worker) => {
          fc.pre(!/^[A-Za-z0-9_-]{1,64}$/.test(worker));
          const a = new SubmitAffinity();
          await a.submit('u1', 'web', bus({ queue: ok(worker) }).send);
          expect(a.routeOf('u1', 'web')).toBeUndefined();
          const b = bus({ queue: ok() });
          await a.submit('u1', 'web', b.send);
          expect(b.sent).toEqual([undefined]);
        },
      ),
      { seed: 13, numRuns: 500 },
    );
  });

  it('a reply without a worker (another worker drives the session) keeps the hint', async () => {
    const a = new SubmitAffinity();
    await a.submit('u1', 'web', bus({ queue: ok('w-a') }).send);
    await a.submit('u1', 'web', bus({ 'w-a': ok() }).send);
    expect(a.routeOf('u1', 'web')).toBe('w-a');
  });

  it("the hinted worker's answer as an error (invalid input, not found…) is the answer: no second send", async () => {
    const a = new SubmitAffinity();
    await a.submit('u1', 'web', bus({ queue: ok('w-a') }).send);
    const refused = new RemoteError({ code: 'invalid_input', message: 'no' });
    const b = bus({ 'w-a': () => Promise.reject(refused), queue: ok('w-b') });
    await expect(a.submit('u1', 'web', b.send)).rejects.toBe(refused);
    expect(b.sent).toEqual(['w-a']);
    expect(a.routeOf('u1', 'web')).toBe('w-a');
  });

  it('a lost connection is not a dead worker: the error stands (the client retries), no send to the queue group', async () => {
    const a = new SubmitAffinity();
    await a.submit('u1', 'web', bus({ queue: ok('w-a') }).send);
    const b = bus({ 'w-a': fails('disconnected'), queue: ok('w-b') });
    await expect(a.submit('u1', 'web', b.send)).rejects.toThrow(BusRequestError);
    expect(b.sent).toEqual(['w-a']);
  });

  it('a hint older than the carry is not used', async () => {
    let now = 1_000_000;
    const a = new SubmitAffinity({ ttlMs: 60_000, now: () => now });
    await a.submit('u1', 'web', bus({ queue: ok('w-a') }).send);
    now += 59_999;
    expect(a.routeOf('u1', 'web')).toBe('w-a');
    now += 2;
    const b = bus({ queue: ok('w-b'), 'w-a': ok('w-a') });
    await a.submit('u1', 'web', b.send);
    expect(b.sent).toEqual([undefined]);
  });

  it('holds at most `max` conversations, whatever the traffic; the least recently used goes first', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.constantFrom('w-a', 'w-b', undefined)), {
          maxLength: 200,
        }),
        async (max, submits) => {
          const a = new SubmitAffinity({ max });
          for (const [user, worker] of submits) {
            await a.submit(`u${user}`, 'web', bus({ queue: ok(worker), 'w-a': ok(worker), 'w-b': ok(worker) }).send);
            expect(a.size).toBeLessThanOrEqual(max);
          }
          // the last conversation named a worker is remembered
          const last = [...submits].reverse().find(([, w]) => w !== undefined);
          if (last) expect(a.routeOf(`u${last[0]}`, 'web')).toBe(last[1]);
        },
      ),
    );
  });
});
