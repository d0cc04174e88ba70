/**
 * The reply mux against a model, over generated interleavings of requests (several on one subject),
 * replies in any order, duplicate and late replies, replies to tokens it never issued, no-responder
 * statuses, timeouts, a publish that throws, the close of the inbox subscription, and the connection
 * lost and back (a request made in the gap is sent at the return, unless its timeout came first). Each request
 * ends exactly once and with what the model says (its own reply's bytes, `no_responders`,
 * `timeout`, `closed`, `publish_failed`); nothing leaks: no map entry or timer is left once every
 * request has ended.
 */
import { expect } from '@jest/globals';
import fc from 'fast-check';
import type { Msg, MsgHdrs, Subscription, SubscriptionOptions } from 'nats';
import { MuxRequestError, ReplyMux, type MuxConnection } from './reply-mux';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const INBOX = '_INBOX.test.ABC';

/** A NATS connection in memory: records what is published; the test delivers to the subscription. */
class FakeConnection implements MuxConnection {
  callback: SubscriptionOptions['callback'] | null = null;
  subject = '';
  subscribes = 0;
  closedFlag = false;
  private endSub: () => void = () => undefined;
  readonly published: { subject: string; reply: string; data: Uint8Array }[] = [];
  failNextPublish = false;

  subscribe(subject: string, opts: SubscriptionOptions): Subscription {
    this.subscribes++;
    this.subject = subject;
    this.callback = opts.callback ?? null;
    const closed = new Promise<void>((r) => (this.endSub = r));
    return { isClosed: () => this.closedFlag, closed } as unknown as Subscription;
  }

  publish(subject: string, data: Uint8Array, opts: { reply: string; headers?: MsgHdrs }): void {
    if (this.failNextPublish) {
      this.failNextPublish = false;
      throw new Error('MAX_PAYLOAD_EXCEEDED');
    }
    this.published.push({ subject, reply: opts.reply, data });
  }

  deliver(subject: string, data: Uint8Array, status?: number): void {
    const headers = status === undefined ? undefined : ({ code: status } as unknown as MsgHdrs);
    this.callback?.(null, { subject, data, headers } as unknown as Msg);
  }

  close(): void {
    this.closedFlag = true;
    this.endSub();
  }
}

type Outcome = { ok: true; data: string } | { ok: false; code: string };

const op = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('request' as const),
      subject: fc.constantFrom('a', 'b'),
      timeoutMs: fc.integer({ min: 1, max: 50 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('requestFailing' as const), timeoutMs: fc.integer({ min: 1, max: 50 }) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('reply' as const),
      pick: fc.nat(),
      status: fc.constantFrom(undefined, undefined, undefined, 503),
      empty: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('stranger' as const), token: fc.constantFrom('zz', '', 'x.y', '-1') }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('gap' as const), up: fc.boolean() }) },
);

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);
const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('ReplyMux', () => {
  beforeAll(() => console.log(`reply-mux: seed=${SEED} — reproduce with FC_SEED=${SEED}`));
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('each request ends once, with its own reply or a clear error, and nothing is left behind', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const nc = new FakeConnection();
        const mux = new ReplyMux(nc, INBOX);
        let clock = 0;
        let closed = false;
        const got = new Map<number, Outcome[]>();
        const expected = new Map<number, Outcome>();
        // the model: requests still waiting, with their deadline and reply subject
        const waiting = new Map<number, { deadline: number; reply: string }>();
        const replies: { id: number; reply: string }[] = [];
        let n = 0;
        let connected = true;
        /** Requests made while disconnected, in order: sent at the reconnect if still waiting. */
        let held: number[] = [];
        const end = (id: number, o: Outcome): void => {
          waiting.delete(id);
          expected.set(id, o);
        };

        for (const o of ops) {
          if (o.kind === 'request' || o.kind === 'requestFailing') {
            const id = n++;
            got.set(id, []);
            const subject = o.kind === 'request' ? o.subject : 'a';
            if (o.kind === 'requestFailing') nc.failNextPublish = true;
            const before = nc.published.length;
            mux.request(subject, enc(`q${id}`), o.timeoutMs).then(
              (d) => got.get(id)!.push({ ok: true, data: dec(d) }),
              (e: unknown) => got.get(id)!.push({ ok: false, code: e instanceof MuxRequestError ? e.code : 'other' }),
            );
            nc.failNextPublish = false;
            if (closed) end(id, { ok: false, code: 'closed' });
            else if (!connected) {
              expect(nc.published.length).toBe(before); // nats.js would drop it: held instead
              waiting.set(id, { deadline: clock + o.timeoutMs, reply: '' });
              held.push(id);
            } else if (o.kind === 'requestFailing') {
              end(id, { ok: false, code: 'publish_failed' });
            } else {
              expect(nc.published.length).toBe(before + 1);
              const sent = nc.published[before];
              expect(sent.subject).toBe(subject);
              expect(dec(sent.data)).toBe(`q${id}`);
              expect(sent.reply.startsWith(`${INBOX}.`)).toBe(true);
              waiting.set(id, { deadline: clock + o.timeoutMs, reply: sent.reply });
              replies.push({ id, reply: sent.reply });
            }
          } else if (o.kind === 'reply') {
            if (replies.length === 0) continue;
            const { id, reply } = replies[o.pick % replies.length];
            const body = o.empty ? '' : `r${id}`;
            nc.deliver(reply, enc(body), o.status);
            if (!closed && waiting.has(id)) {
              end(id, o.status === 503 && o.empty ? { ok: false, code: 'no_responders' } : { ok: true, data: body });
            }
          } else if (o.kind === 'stranger') {
            nc.deliver(`${INBOX}.${o.token}`, enc('stranger'));
          } else if (o.kind === 'advance') {
            clock += o.ms;
            jest.advanceTimersByTime(o.ms);
            for (const [id, w] of waiting) if (w.deadline <= clock) end(id, { ok: false, code: 'timeout' });
          } else if (o.kind === 'gap') {
            const before = nc.published.length;
            mux.setConnected(o.up);
            connected = o.up;
            if (o.up) {
              const sendNow = held.filter((id) => waiting.has(id));
              held = [];
              expect(nc.published.length).toBe(before + sendNow.length);
              for (const [i, id] of sendNow.entries()) {
                const sent = nc.published[before + i];
                expect(dec(sent.data)).toBe(`q${id}`);
                waiting.get(id)!.reply = sent.reply;
                replies.push({ id, reply: sent.reply });
              }
            } else expect(nc.published.length).toBe(before);
          } else {
            if (nc.subscribes === 0) continue; // nothing subscribed yet: nothing to close
            closed = true;
            nc.close();
            await flush();
            for (const id of [...waiting.keys()]) end(id, { ok: false, code: 'closed' });
          }
          await flush();
          expect(mux.size).toBe(waiting.size);
          expect(jest.getTimerCount()).toBe(waiting.size);
        }

        // every request still waiting ends by its timeout
        jest.advanceTimersByTime(100);
        for (const id of [...waiting.keys()]) end(id, { ok: false, code: 'timeout' });
        await flush();
        expect(mux.size).toBe(0);
        expect(jest.getTimerCount()).toBe(0);
        expect(nc.subscribes).toBeLessThanOrEqual(1);
        if (nc.subscribes === 1) expect(nc.subject).toBe(`${INBOX}.*`);
        for (const [id, outcomes] of got) {
          expect({ id, outcomes }).toEqual({ id, outcomes: [expected.get(id)] });
        }
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('a reply with a body and status 503 is a reply, not no-responders (only an empty 503 is)', async () => {
    const nc = new FakeConnection();
    const mux = new ReplyMux(nc, INBOX);
    const p = mux.request('a', enc('q'), 1000);
    nc.deliver(nc.published[0].reply, enc('body'), 503);
    await expect(p.then(dec)).resolves.toBe('body');
    expect(mux.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('concurrent requests on one subject each get their own reply, in any order', async () => {
    const nc = new FakeConnection();
    const mux = new ReplyMux(nc, INBOX);
    const ps = Array.from({ length: 100 }, (_, i) => mux.request('same', enc(String(i)), 1000));
    const sent = [...nc.published].reverse();
    for (const s of sent) nc.deliver(s.reply, enc(`re:${dec(s.data)}`));
    const out = await Promise.all(ps.map((p) => p.then(dec)));
    expect(out).toEqual(Array.from({ length: 100 }, (_, i) => `re:${i}`));
    expect(new Set(nc.published.map((s) => s.reply)).size).toBe(100);
    expect(nc.subscribes).toBe(1);
    expect(mux.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a publish the server refuses ends the oldest request on that subject at once, naming why; the others wait on', async () => {
    const nc = new FakeConnection();
    const mux = new ReplyMux(nc, INBOX);
    const first = mux.request('denied', enc('1'), 10_000);
    const second = mux.request('denied', enc('2'), 10_000);
    const other = mux.request('allowed', enc('3'), 10_000);
    expect(mux.refusePublish('denied', 'Permissions Violation for Publish to "denied"')).toBe(true);
    await expect(first).rejects.toMatchObject({
      code: 'refused',
      message: expect.stringMatching(/Permissions Violation/),
    });
    expect(mux.size).toBe(2);
    expect(mux.refusePublish('denied', 'again')).toBe(true);
    await expect(second).rejects.toMatchObject({ code: 'refused' });
    expect(mux.refusePublish('denied', 'none left')).toBe(false);
    nc.deliver(nc.published[2].reply, enc('ok'));
    await expect(other.then(dec)).resolves.toBe('ok');
    expect(mux.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });
});
