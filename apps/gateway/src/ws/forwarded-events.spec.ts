/**
 * Live session events are forwarded as the publisher's JSON text. Hostile: generated malformed,
 * oversized, mismatched and prototype-polluting messages never reach a socket and never throw.
 * Differential: for every valid event a client receives exactly the bytes the old path (zod parse,
 * then JSON.stringify of the parsed copy) sent; a newer worker's unknown fields and types are the
 * documented superset. Inside a property the checks are node:assert's: it runs thousands of times,
 * and each `expect` call costs an error object with its stack.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import WebSocket from 'ws';
import { z } from 'zod';
import {
  EphemeralEventSchema,
  readEphemeralEventEnvelope,
  readSessionEventEnvelope,
  SESSION_EVENT_TYPES,
  SessionEventBodies,
  SessionEventSchema,
  type SessionEventType,
} from '@skald/contracts';
import { FORWARD_MAX_BYTES, hasPrototypeKey, readForwarded } from '@skald/messaging/forwarded';
import type { Principal } from '../auth/auth.service';
import { forwardable, forwardableEphemeral } from './forwarded-events';
import { ReplayPage, WsConnection } from './ws-connection';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const USER = '00000000-0000-4000-8000-0000000000aa';
const OTHER_USER = '00000000-0000-4000-8000-0000000000bb';
const S1 = '00000000-0000-4000-8000-000000000001';
const S2 = '00000000-0000-4000-8000-000000000002';
const encoder = new TextEncoder();

/** What the publisher (`Bus.publish`) puts on the wire for an event: its own schema's output, as JSON. */
const published = (event: unknown): Uint8Array => encoder.encode(JSON.stringify(SessionEventSchema.parse(event)));

/** The old path: decode, zod-parse with the gateway's schema, re-serialise the parsed copy. */
function oldFrame(bytes: Uint8Array): string | null {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
  const parsed = SessionEventSchema.safeParse(value);
  return parsed.success ? JSON.stringify(parsed.data) : null;
}

/** The new path up to the socket of a session `S1` of `USER`: the frames it sent, or a throw. */
function deliveredFrames(subject: string, bytes: Uint8Array, lastSeq = 0): string[] {
  const sent: string[] = [];
  const ws = {
    readyState: WebSocket.OPEN,
    bufferedAmount: 0,
    send: (data: string) => void sent.push(data),
    close: () => undefined,
  } as unknown as WebSocket;
  const replay = (): Promise<ReplayPage> => Promise.resolve({ events: [], last_seq: lastSeq, running: false });
  const conn = new WsConnection(ws, { actor: { userId: USER, role: 'user' } } as unknown as Principal, 'web', replay);
  conn.sessionId = S1;
  conn.lastSeq = lastSeq;
  const read = readForwarded(bytes, readSessionEventEnvelope);
  if (!read.ok) return sent;
  const event = forwardable(USER, subject, read.envelope, read.text);
  if (event) conn.deliverLive(event);
  return sent;
}

/** A generator of values a zod schema accepts (the kinds the session event bodies use). */
function arbitraryOf(schema: z.ZodType): fc.Arbitrary<unknown> {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  const text = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.constantFrom('__proto__', '"', '\\u0000', '\u2028'),
  );
  switch (def.type) {
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      const keys = Object.keys(shape);
      const optional = keys.filter(
        (k) => (shape[k] as unknown as { _zod: { def: { type: string } } })._zod.def.type === 'optional',
      );
      return fc.record(Object.fromEntries(keys.map((k) => [k, arbitraryOf(shape[k])])), {
        requiredKeys: keys.filter((k) => !optional.includes(k)),
      });
    }
    case 'optional':
      return arbitraryOf(def.innerType as z.ZodType);
    case 'string':
      return def.format === 'uuid' ? fc.uuid() : text;
    case 'number':
      return fc.integer();
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(arbitraryOf(def.element as z.ZodType), { maxLength: 3 });
    case 'union':
      return fc.oneof(...(def.options as z.ZodType[]).map(arbitraryOf));
    case 'enum':
      return fc.constantFrom(...Object.values(def.entries as Record<string, string>));
    case 'record':
      return fc.dictionary(text, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });
    case 'unknown':
      return fc.jsonValue({ maxDepth: 3 });
    case 'literal':
      return fc.constantFrom(...(def.values as unknown[]));
    default:
      throw new Error(`no generator for zod type ${def.type}`);
  }
}

const validEvent = (session = S1): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .constantFrom(...SESSION_EVENT_TYPES)
    .chain((type: SessionEventType) =>
      fc.tuple(fc.constant(type), arbitraryOf(SessionEventBodies[type]), fc.integer({ min: 1, max: 2 ** 40 })),
    )
    .map(([type, body, seq]) => ({ ...(body as object), type, session_id: session, seq }))
    // the few the generator gets wrong (a string's minimum length, a path's rules) are not events
    .filter((e) => SessionEventSchema.safeParse(e).success);

const subject = (user = USER, session = S1) => `events.${user}.${session}`;

describe('forwarded session events', () => {
  console.log(`forwarded events: seed=${SEED} — reproduce with FC_SEED=${SEED}`);

  it('a client receives the bytes the old path sent, for every valid event of every type (differential, seeded)', () => {
    fc.assert(
      fc.property(validEvent(), (event) => {
        const bytes = published(event);
        const frames = deliveredFrames(subject(), bytes, (event.seq as number) - 1);
        const text = new TextDecoder().decode(bytes);
        // the one difference: the old path sent a `__proto__` key nested in a tool's arguments
        if (hasPrototypeKey(text, JSON.parse(text))) assert.deepStrictEqual(frames, []);
        else assert.deepStrictEqual(frames, [oldFrame(bytes)]);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('never throws and never forwards what is not a JSON object with an envelope: arbitrary bytes and text (seeded)', () => {
    const junk = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.string({ unit: 'binary' }).map((t) => encoder.encode(t)),
      fc.jsonValue().map((v) => encoder.encode(JSON.stringify(v))),
      // a valid event with one envelope field broken
      fc
        .tuple(
          validEvent(),
          fc.constantFrom('type', 'session_id', 'seq'),
          fc.oneof(
            fc.jsonValue(),
            fc.constantFrom(
              0,
              -1,
              1.5,
              2 ** 53,
              '1',
              'hello',
              'ack',
              'token_delta',
              'Done',
              'x y',
              S1.toUpperCase() + 'x',
            ),
          ),
        )
        .map(([e, k, v]) => encoder.encode(JSON.stringify({ ...e, [k]: v }))),
    );
    fc.assert(
      fc.property(junk, (bytes) => {
        const frames = deliveredFrames(subject(), bytes);
        for (const f of frames) {
          const v = JSON.parse(f) as Record<string, unknown>;
          assert.notStrictEqual(readSessionEventEnvelope(v), null);
          assert.strictEqual(v.session_id, S1);
        }
        assert.ok(frames.length <= 1, `${frames.length} frames for one message`);
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('never forwards an event published on a subject of another user or session, or a malformed subject', () => {
    fc.assert(
      fc.property(
        validEvent(),
        fc.constantFrom(
          subject(OTHER_USER, S1),
          subject(USER, S2),
          `${subject()}.x`,
          `events.${USER}`,
          `ephemeral.${USER}.${S1}`,
          `events.${USER}.*`,
        ),
        (event, wrong) => {
          const bytes = published(event);
          assert.deepStrictEqual(deliveredFrames(wrong, bytes, (event.seq as number) - 1), []);
          assert.strictEqual(deliveredFrames(subject(), bytes, (event.seq as number) - 1).length, 1);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    // the old path forwarded by the body's session_id whatever the subject said:
    expect(oldFrame(published({ type: 'file_changed', path: 'a', session_id: S1, seq: 1 }))).not.toBeNull();
  });

  it('never forwards a prototype key at any depth, spelled out or escaped (seeded)', () => {
    const pollution = fc.constantFrom(
      '{"__proto__":{"polluted":true}}',
      '{"\\u005f_proto__":{"polluted":true}}',
      '{"__pro\\u0074o__":1}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      '{"constructor":{"proto\\u0074ype":{"polluted":true}}}',
      '[{"a":[{"__proto__":null}]}]',
    );
    fc.assert(
      fc.property(validEvent(), fc.nat(3), pollution, (event, depth, bad) => {
        // the polluting value as a new top-level field, or nested `depth` levels into a tool's arguments
        let nested: string = bad;
        for (let i = 0; i < depth; i++) nested = `{"a":${nested}}`;
        const base = JSON.stringify(SessionEventSchema.parse(event));
        const texts = [`${base.slice(0, -1)},"x":${nested}}`, `{"__proto__":{"seq":1},${base.slice(1)}`];
        if (event.type === 'tool_start' || event.type === 'approval_required')
          texts.push(JSON.stringify({ ...event, arguments: {} }).replace('"arguments":{}', `"arguments":${nested}`));
        for (const t of texts)
          assert.deepStrictEqual(deliveredFrames(subject(), encoder.encode(t), (event.seq as number) - 1), []);
        assert.strictEqual(({} as Record<string, unknown>).polluted, undefined);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('forwards the words __proto__ and prototype inside string values (a file read, a command)', () => {
    const event = {
      type: 'tool_done',
      tool_call_id: S2,
      result: 'obj.__proto__ = x; Foo.prototype.bar',
      result_type: 'text',
      session_id: S1,
      seq: 1,
    };
    expect(deliveredFrames(subject(), published(event))).toEqual([oldFrame(published(event))]);
  });

  it('never forwards an oversized message, and bounds the walk of a deeply nested one', () => {
    const big = {
      type: 'tool_done',
      tool_call_id: S2,
      result: 'x'.repeat(FORWARD_MAX_BYTES),
      result_type: 'text',
      session_id: S1,
      seq: 1,
    };
    expect(deliveredFrames(subject(), encoder.encode(JSON.stringify(big)))).toEqual([]);
    const deep = `{"type":"tool_done","session_id":"${S1}","seq":1,"x":${'['.repeat(200_000)}"\\u0041"${']'.repeat(200_000)}}`;
    expect(() => deliveredFrames(subject(), encoder.encode(deep))).not.toThrow();
  });

  it("version skew: a newer worker's unknown fields and unknown snake_case types are forwarded as sent; other kinds are not", () => {
    const withField = encoder.encode(
      JSON.stringify({ type: 'file_changed', path: 'a.txt', session_id: S1, seq: 1, added_in_v2: { x: 1 } }),
    );
    expect(deliveredFrames(subject(), withField)).toEqual([new TextDecoder().decode(withField)]);
    expect(oldFrame(withField)).toBe(JSON.stringify({ path: 'a.txt', type: 'file_changed', session_id: S1, seq: 1 }));
    const newType = encoder.encode(JSON.stringify({ type: 'plan_updated', steps: [], session_id: S1, seq: 1 }));
    expect(deliveredFrames(subject(), newType)).toEqual([new TextDecoder().decode(newType)]);
    expect(oldFrame(newType)).toBeNull();
    for (const type of [
      'hello',
      'ack',
      'turn_running',
      'token_delta',
      'tool_progress',
      'new_session',
      'approval_requested',
      'Plan',
      'a-b',
      '',
    ])
      expect(deliveredFrames(subject(), encoder.encode(JSON.stringify({ type, session_id: S1, seq: 1 })))).toEqual([]);
  });

  describe('ephemeral events', () => {
    /** The new path for `ephemeral.<user>.<session>`: the frames a socket showing S1 got. */
    function ephemeralFrames(subj: string, bytes: Uint8Array): string[] {
      const read = readForwarded(bytes, readEphemeralEventEnvelope);
      if (!read.ok) return [];
      const event = forwardableEphemeral(USER, subj, read.envelope, read.text);
      return event && event.session_id === S1 ? [event.text] : [];
    }
    const oldEphemeral = (bytes: Uint8Array): string | null => {
      const parsed = EphemeralEventSchema.safeParse(JSON.parse(new TextDecoder().decode(bytes)));
      return parsed.success && parsed.data.session_id === S1 ? JSON.stringify(parsed.data) : null;
    };
    const ephemeral = fc
      .oneof(...EphemeralEventSchema.options.map((o) => arbitraryOf(o)))
      .map((e) => ({ ...(e as object), session_id: S1 }))
      .filter((e) => EphemeralEventSchema.safeParse(e).success);
    const eSubject = (user = USER, session = S1) => `ephemeral.${user}.${session}`;

    it('a client receives the bytes the old path sent (differential, seeded)', () => {
      fc.assert(
        fc.property(ephemeral, (e) => {
          const bytes = encoder.encode(JSON.stringify(EphemeralEventSchema.parse(e)));
          assert.deepStrictEqual(ephemeralFrames(eSubject(), bytes), [oldEphemeral(bytes)]);
        }),
        { seed: SEED, numRuns: 1000 },
      );
    });

    it('never forwards a mismatched subject, another kind, a broken envelope or a prototype key (seeded)', () => {
      fc.assert(
        fc.property(
          ephemeral,
          fc.constantFrom(eSubject(OTHER_USER), eSubject(USER, S2), `${eSubject()}.x`, subject()),
          fc.constantFrom('thinking', 'done', 'hello', 'token_deltas', 1, null),
          (e, wrongSubject, wrongType) => {
            const bytes = encoder.encode(JSON.stringify(e));
            assert.deepStrictEqual(ephemeralFrames(wrongSubject, bytes), []);
            assert.deepStrictEqual(
              ephemeralFrames(eSubject(), encoder.encode(JSON.stringify({ ...e, type: wrongType }))),
              [],
            );
            assert.deepStrictEqual(
              ephemeralFrames(eSubject(), encoder.encode(JSON.stringify({ ...e, session_id: 'x' }))),
              [],
            );
            const polluted = `{"\\u005f_proto__":{"x":1},${JSON.stringify(e).slice(1)}`;
            assert.deepStrictEqual(ephemeralFrames(eSubject(), encoder.encode(polluted)), []);
          },
        ),
        { seed: SEED, numRuns: 300 },
      );
    });
  });
});
