import fc from 'fast-check';
import { SimRequestLog } from './sim-request-log';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const fields = (body: unknown) => ({
  method: 'POST',
  path: '/v1/chat/completions',
  headers: {},
  authorization: false,
  body,
  stream: true,
});

/**
 * The request log is bounded by the bytes of the bodies it keeps as well as by their count: a long
 * conversation's requests (hundreds of KB each) must not pile up in the simulator's heap, where every
 * garbage collection would walk them (a cost that grows with the conversation and is the harness's,
 * not the system's under test). The newest request is always kept, whatever its size.
 */
describe('SimRequestLog bounds', () => {
  it('keeps the newest requests within its byte and count bounds, in order, ids never reused', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 5000 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 20_000 }),
        (sizes, capacity, maxBytes) => {
          const log = new SimRequestLog(capacity, maxBytes);
          const raws = sizes.map((n, i) => `${i}:${'x'.repeat(n)}`);
          for (const raw of raws) log.open(fields({ raw }), raw);
          const kept = log.list();
          const ids = kept.map((e) => e.id);
          // the newest always, then as many of the next newest as fit both bounds
          let bytes = 0;
          let expected = 0;
          for (let i = raws.length - 1; i >= 0; i--) {
            const next = bytes + Buffer.byteLength(raws[i]);
            if (expected > 0 && (expected === capacity || next > maxBytes)) break;
            bytes = next;
            expected++;
          }
          expect(ids).toEqual(Array.from({ length: expected }, (_, k) => raws.length - expected + k + 1));
          expect(kept.map((e) => (e.body as { raw: string }).raw)).toEqual(raws.slice(raws.length - expected));
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('holds a bounded number of bytes however many long requests arrive', () => {
    const log = new SimRequestLog(1000, 64 * 1024);
    const big = 'y'.repeat(20 * 1024);
    for (let i = 0; i < 500; i++) log.open(fields({ i }), big);
    expect(log.list().length).toBe(3);
    expect(log.list().at(-1)?.body).toEqual({ i: 499 });
  });

  it('a waiter still sees an entry updated after it was logged', async () => {
    const log = new SimRequestLog(10, 1024);
    const entry = log.open(fields({}), '{}');
    const seen = log.waitFor((e) => e.outcome === 'completed', 1000);
    log.update(entry, { outcome: 'completed' });
    expect((await seen).id).toBe(entry.id);
  });
});
