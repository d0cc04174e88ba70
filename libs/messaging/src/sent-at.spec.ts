/**
 * `sentAtOf` reads the sent-at stamp from the raw header block; it must answer what
 * `msg.headers.get('x-skald-sent-at')` answered (as a positive finite number, else null) for any
 * header block a publisher can send — other headers before and after it, the key in another case or
 * with a space before the colon, values padded with any whitespace (JavaScript's trim, NBSP and
 * U+2028 included), signs, exponents, hex, junk, duplicates (the first wins), lines without a colon,
 * bare LF inside a value, invalid UTF-8 — and never throw where nats.js's decoding threw (a key it
 * refuses). Messages are nats.js's own MsgImpl (the class the client delivers), so a change of its
 * internals fails here rather than silently falling back.
 */
import fc from 'fast-check';
import type { Msg } from 'nats';
import { MsgImpl } from 'nats/lib/nats-base-client/msg';
import { headers as natsHeaders, type MsgHdrs } from 'nats';
import { SENT_AT_HEADER, sentAtInBlock, sentAtOf } from './sent-at';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const te = new TextEncoder();

/** A message as nats.js's parser hands it over: the header block then the payload in one buffer. */
function messageOf(block: Uint8Array | null, payload = te.encode('{"type":"x"}')): Msg {
  const data = new Uint8Array((block?.length ?? 0) + payload.length);
  if (block) data.set(block, 0);
  data.set(payload, block?.length ?? 0);
  const args = { subject: te.encode('events.u.s'), sid: 1, hdr: block ? block.length : -1, size: data.length };
  return new MsgImpl(args, data, { publish: () => undefined });
}

/** The bytes nats.js writes for a header object (its MsgHdrsImpl's `encode`, not in the public type). */
const bytesOf = (h: MsgHdrs): Uint8Array => (h as MsgHdrs & { encode(): Uint8Array }).encode();

/** What the old path answered: nats.js's decoded headers, or 'throws'. */
function viaHeaders(msg: Msg): number | null | 'throws' {
  try {
    const v = Number(msg.headers?.get(SENT_AT_HEADER));
    return Number.isFinite(v) && v > 0 ? v : null;
  } catch {
    return 'throws';
  }
}

const pad = fc.constantFrom('', ' ', '  ', '\t', '\u00a0', '\u2028', '\ufeff', '\u3000', '\v');
const numberish = fc.oneof(
  fc.integer({ min: -5, max: 2 ** 53 }).map(String),
  fc.stringMatching(/^[0-9]{14,25}$/),
  fc.double({ noNaN: false }).map(String),
  fc.constantFrom('', '0', '-1', '1e3', '0x10', '+17', '1_000', 'Infinity', '12abc', '١٢٣', '1.5', '.5', '00042'),
  fc.string({ maxLength: 12 }),
);
const value = fc
  .tuple(pad, numberish, pad, fc.boolean())
  .map(([a, v, b, lf]) => `${a}${v}${lf ? '\n' : ''}${b}`.replace(/\r/g, ''));
const sentAtKey = fc.constantFrom(
  SENT_AT_HEADER,
  SENT_AT_HEADER,
  SENT_AT_HEADER,
  'X-Skald-Sent-At',
  `${SENT_AT_HEADER} `,
  ` ${SENT_AT_HEADER}`,
  `${SENT_AT_HEADER}x`,
  `x${SENT_AT_HEADER}`,
  'x-skald-sent',
);
const otherKey = fc.oneof(
  fc.constantFrom('traceparent', 'tracestate', 'Nats-Msg-Id', 'a', 'x-skald', 'x-skald-sent-at-2'),
  fc.string({ minLength: 0, maxLength: 10 }).map((s) => s.replace(/[\r\n:]/g, '')),
);
const line = fc.oneof(
  fc.tuple(sentAtKey, value).map(([k, v]) => `${k}:${v}`),
  fc.tuple(otherKey, fc.string({ maxLength: 20 })).map(([k, v]) => `${k}: ${v.replace(/\r/g, '')}`),
  fc.string({ maxLength: 15 }).map((s) => s.replace(/[\r:]/g, '')),
);
const textBlock = fc
  .tuple(fc.constantFrom('NATS/1.0', 'NATS/1.0 503', 'NATS/1.0 408 Request Timeout'), fc.array(line, { maxLength: 6 }))
  .map(([first, lines]) => te.encode(`${[first, ...lines].join('\r\n')}\r\n\r\n`));
/** Text blocks with raw bytes spliced in (invalid UTF-8, stray CR/LF), and raw bytes alone. */
const block = fc.oneof(
  { weight: 4, arbitrary: textBlock },
  {
    weight: 1,
    arbitrary: fc.tuple(textBlock, fc.uint8Array({ maxLength: 8 }), fc.nat()).map(([b, junk, at]) => {
      const i = at % (b.length + 1);
      return Uint8Array.from([...b.subarray(0, i), ...junk, ...b.subarray(i)]);
    }),
  },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 40 }) },
);

describe('sentAtOf', () => {
  it(`answers what the decoded headers answered, over generated header blocks (seed ${SEED})`, () => {
    fc.assert(
      fc.property(block, (b) => {
        const old = viaHeaders(messageOf(b));
        const now = sentAtOf(messageOf(b));
        if (old === 'throws') expect(now === null || Number.isFinite(now)).toBe(true);
        else expect(now).toBe(old);
      }),
      { seed: SEED, numRuns: 4000 },
    );
  });

  it('reads the stamp a publisher wrote, and the first of two', () => {
    const h = natsHeaders();
    h.set(SENT_AT_HEADER, '1733212345678');
    h.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(sentAtOf(messageOf(bytesOf(h)))).toBe(1733212345678);
    h.append(SENT_AT_HEADER, '5');
    expect(sentAtOf(messageOf(bytesOf(h)))).toBe(1733212345678);
    const only = natsHeaders();
    only.set('traceparent', 'x');
    expect(sentAtOf(messageOf(bytesOf(only)))).toBeNull();
  });

  it('is null for a message without headers', () => {
    expect(sentAtOf(messageOf(null))).toBeNull();
  });

  it('asks msg.headers when the message is not the shape it was written against', () => {
    const h = natsHeaders();
    h.set(SENT_AT_HEADER, '42');
    expect(sentAtOf({ headers: h } as unknown as Msg)).toBe(42);
    expect(sentAtOf({ headers: undefined } as unknown as Msg)).toBeNull();
  });

  it('stops at the end of the header block, not at the end of the buffer', () => {
    const b = te.encode(`NATS/1.0\r\n${SENT_AT_HEADER}: 77\r\n\r\n`);
    // the payload spells a later line with another value; the block's own ends before it
    const payload = te.encode(`\r\n${SENT_AT_HEADER}: 99\r\n`);
    expect(sentAtOf(messageOf(b, payload))).toBe(77);
    const cut = te.encode(`NATS/1.0\r\nother: 1\r\n\r\n`);
    expect(sentAtOf(messageOf(cut, payload))).toBeNull();
    expect(sentAtInBlock(te.encode(`NATS/1.0\r\n${SENT_AT_HEADER}: 12`), 10)).toBeNaN();
  });

  it('answers a 1 MiB block of near misses in bounded time', () => {
    const near = te.encode(`\r\n${SENT_AT_HEADER.slice(0, -1)}`);
    const big = new Uint8Array(1024 * 1024);
    for (let i = 0; i + near.length <= big.length; i += near.length) big.set(near, i);
    const started = performance.now();
    expect(sentAtOf(messageOf(big))).toBeNull();
    expect(performance.now() - started).toBeLessThan(200);
  });
});
