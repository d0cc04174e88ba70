/**
 * The receiver is the contract's boundary: every message a subscriber gets is parsed with its
 * schema. A Bus made with `checkOutgoing: false` (production's default) does not parse again what
 * it publishes — and over generated payloads, against the real server, the receiver still drops
 * every message the checking sender would have refused, and delivers the others exactly as it
 * delivered them after the sender's parse (differential: checking sender vs not).
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { z } from 'zod';
import { EphemeralEventSchema, SessionEventSchema, TOPICS, UserEventSchema } from '@skald/contracts';
import { NatsBus } from './bus';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const quiet = { warn: () => undefined, error: () => undefined };

const id = (): string => randomUUID();
const sid = id();
/** Valid messages of the subjects the session worker publishes, as seeds for the mutations. */
const SEEDS: { schema: z.ZodType<unknown>; name: string; value: Record<string, unknown> }[] = [
  {
    name: 'tool_done',
    schema: SessionEventSchema,
    value: { type: 'tool_done', session_id: sid, seq: 7, tool_call_id: id(), result: 'x', result_type: 'text' },
  },
  {
    name: 'tool_start',
    schema: SessionEventSchema,
    value: {
      type: 'tool_start',
      session_id: sid,
      seq: 3,
      tool_call_id: id(),
      message_id: id(),
      name: 'read_file',
      arguments: { path: 'a.txt', n: 1, deep: { k: [1, 'two', null] } },
      label_short: 'Read a.txt',
      label_full: 'Read /workspace/a.txt',
    },
  },
  {
    name: 'user_message',
    schema: SessionEventSchema,
    value: { type: 'user_message', session_id: sid, seq: 1, message_id: id(), content: 'hi', client_message_id: 'c1' },
  },
  {
    name: 'done',
    schema: SessionEventSchema,
    value: { type: 'done', session_id: sid, seq: 9, message_id: id(), stack_id: id(), content: 'ok', output_tokens: 3 },
  },
  {
    name: 'token_delta',
    schema: EphemeralEventSchema,
    value: {
      type: 'token_delta',
      session_id: sid,
      message_id: id(),
      depth: 0,
      kind: 'content',
      offset: 0,
      delta: 'tok',
      after_seq: 0,
    },
  },
  { name: 'wake', schema: TOPICS.sessionWake.message, value: { session_id: sid, reason: 'input' } },
  { name: 'tool cancel', schema: TOPICS.toolCancel.message, value: { tool_call_id: id() } },
  {
    name: 'user event',
    schema: UserEventSchema,
    value: { type: 'approval_requested', request_id: id(), tool_call_id: id(), session_id: sid },
  },
];

/** A seed, as it is or with keys replaced (by JSON values, undefined, wrong types), removed or added. */
const payload = fc
  .record({
    seed: fc.integer({ min: 0, max: SEEDS.length - 1 }),
    edits: fc.array(
      fc.record({
        at: fc.nat(),
        op: fc.constantFrom('replace', 'delete', 'add'),
        value: fc.oneof(
          fc.jsonValue({ maxDepth: 2 }),
          fc.constant(undefined),
          fc.uuid(),
          fc.integer(),
          fc.string(),
          fc.constantFrom('tool_done', 'tool_start', 'done', 'token_delta', 'approval_requested'),
        ),
        key: fc.string({ maxLength: 8 }),
      }),
      { maxLength: 3 },
    ),
  })
  .map(({ seed, edits }) => {
    const v: Record<string, unknown> = structuredClone(SEEDS[seed].value);
    for (const e of edits) {
      const keys = Object.keys(v);
      const k = keys.length ? keys[e.at % keys.length] : e.key;
      if (e.op === 'replace') v[k] = e.value;
      else if (e.op === 'delete') delete v[k];
      else v[e.key] = e.value;
    }
    return { seed, value: v };
  });

type Outcome = { kind: 'refused' } | { kind: 'dropped' } | { kind: 'delivered'; data: unknown };

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

describe('NatsBus: the receiver is the boundary (outgoing messages unchecked)', () => {
  let checking: NatsBus;
  let unchecked: NatsBus;
  let receiver: NatsBus;
  const dropped = new Set<string>();
  beforeAll(async () => {
    checking = await NatsBus.connect({ servers: NATS_URL, name: `out-check-${id()}`, checkOutgoing: true }, quiet);
    unchecked = await NatsBus.connect({ servers: NATS_URL, name: `out-plain-${id()}`, checkOutgoing: false }, quiet);
    receiver = await NatsBus.connect(
      { servers: NATS_URL, name: `out-recv-${id()}` },
      { warn: (o: object) => void dropped.add((o as { subject: string }).subject), error: () => undefined },
    );
  });
  afterAll(async () => {
    await Promise.all([checking.drain(), unchecked.drain(), receiver.drain()]);
  });

  it('drops what the checking sender refuses and delivers the rest unchanged, over 400 generated payloads', async () => {
    const runs = fc.sample(payload, { seed: 0x5ca1d, numRuns: 400 });
    const base = `out-spec.${id()}`;
    const got = new Map<string, unknown>();
    for (const [i, s] of SEEDS.entries())
      receiver.subscribeUnkeyed(`${base}.${i}.>`, s.schema, (m, subject) => void got.set(subject, m));
    await receiver.nc.flush();

    const refused = new Set<number>();
    runs.forEach(({ seed, value }, n) => {
      const schema = SEEDS[seed].schema;
      try {
        checking.publishUnkeyed(`${base}.${seed}.old.${n}`, schema, value);
      } catch {
        refused.add(n);
      }
      unchecked.publishUnkeyed(`${base}.${seed}.new.${n}`, schema, value);
    });
    await Promise.all([checking.nc.flush(), unchecked.nc.flush()]);
    const expected = 2 * runs.length - refused.size;
    await until(() => got.size + dropped.size >= expected, `${expected} messages received or dropped`);

    const outcome = (seed: number, which: 'old' | 'new', n: number): Outcome => {
      const subject = `${base}.${seed}.${which}.${n}`;
      if (which === 'old' && refused.has(n)) return { kind: 'refused' };
      if (got.has(subject)) return { kind: 'delivered', data: got.get(subject) };
      if (dropped.has(subject)) return { kind: 'dropped' };
      throw new Error(`${subject} neither delivered nor dropped`);
    };
    let delivered = 0;
    runs.forEach(({ seed }, n) => {
      const before = outcome(seed, 'old', n);
      const after = outcome(seed, 'new', n);
      if (before.kind === 'delivered') {
        delivered++;
        expect(after).toEqual(before);
      } else {
        expect(after.kind).toBe('dropped');
      }
    });
    // both sides of the property are exercised
    expect(delivered).toBeGreaterThan(40);
    expect(runs.length - delivered).toBeGreaterThan(40);
  });

  it('publishes an invalid message without throwing; the subscriber drops it', async () => {
    const subject = `out-spec.${id()}`;
    const schema = z.object({ n: z.string() });
    const got: unknown[] = [];
    receiver.subscribeUnkeyed(subject, schema, (m) => void got.push(m));
    await receiver.nc.flush();
    expect(() => unchecked.publishUnkeyed(subject, schema, { n: 1 } as unknown as { n: string })).not.toThrow();
    unchecked.publishUnkeyed(subject, schema, { n: 'ok' });
    await unchecked.nc.flush();
    await until(() => got.length === 1 && dropped.has(subject), 'the valid message and the dropped one');
    expect(got).toEqual([{ n: 'ok' }]);
  });

  it('a checking sender still refuses an invalid message (tests and development)', () => {
    const schema = z.object({ n: z.string() });
    expect(() => checking.publishUnkeyed(`out-spec.${id()}`, schema, { n: 1 } as unknown as { n: string })).toThrow();
  });
});
