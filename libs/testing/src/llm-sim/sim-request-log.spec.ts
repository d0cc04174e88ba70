import fc from 'fast-check';
import { SimRequestLog } from './sim-request-log';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const fields = {
  method: 'POST',
  path: '/v1/chat/completions',
  headers: {},
  authorization: false,
  stream: true,
};

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
          const raws = sizes.map((n, i) => JSON.stringify({ i, pad: 'x'.repeat(n) }));
          for (const raw of raws) log.open(fields, raw);
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
          expect(kept.map((e) => JSON.stringify(e.body))).toEqual(raws.slice(raws.length - expected));
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('holds a bounded number of bytes however many long requests arrive', () => {
    const log = new SimRequestLog(1000, 64 * 1024);
    const big = 'y'.repeat(20 * 1024);
    for (let i = 0; i < 500; i++) log.open(fields, JSON.stringify({ i, big }));
    expect(log.list().length).toBe(3);
    expect(log.list().at(-1)?.body).toEqual({ i: 499, big });
  });

  it('a waiter still sees an entry updated after it was logged', async () => {
    const log = new SimRequestLog(10, 1024);
    const entry = log.open(fields, '{}');
    const seen = log.waitFor((e) => e.outcome === 'completed', 1000);
    log.update(entry, { outcome: 'completed' });
    expect((await seen).id).toBe(entry.id);
  });
});

/**
 * The log keeps each request's raw text only; `body` is its JSON, parsed when first read. A run that
 * never reads the log (a benchmark) keeps no parsed object graph per request: the parsed request a
 * reply saw can be collected once it is answered.
 */
describe('SimRequestLog bodies', () => {
  it('reads body as the JSON of the raw text (null when not JSON), in list, waitFor and the entry itself', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        async (raw) => {
          let expected: unknown = null;
          try {
            expected = JSON.parse(raw);
          } catch {
            // not JSON
          }
          const log = new SimRequestLog(10, 1 << 20);
          const entry = log.open(fields, raw);
          const seen = await log.waitFor((e) => e.id === entry.id, 1000);
          expect(seen.body).toEqual(expected);
          expect(log.list()[0].body).toEqual(expected);
          expect(log.list({ contains: raw })).toHaveLength(1);
          expect(entry.body).toEqual(expected);
          expect((JSON.parse(JSON.stringify(log.list()[0])) as { body: unknown }).body).toEqual(
            JSON.parse(JSON.stringify(expected ?? null)),
          );
          entry.body = 'replaced';
          expect(log.list()[0].body).toBe('replaced');
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});
