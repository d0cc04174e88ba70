import { expect } from '@jest/globals';
import fc from 'fast-check';
import { ClientFrame, ClientMessageId } from '@skald/contracts';
import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { ApiError } from '../http/api-error';
import { frameErrorOf, parseClientFrame } from './client-frame';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const frame = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('parseClientFrame: a frame’s bytes → a client frame or its error event', () => {
  it('answers a `type` nested 10,000 deep with invalid_input naming type (it used to crash the gateway)', () => {
    const deep = `{"type":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    const r = parseClientFrame(frame(deep));
    expect(r).toMatchObject({
      ok: false,
      error: { code: 'invalid_input', field: expect.stringMatching(/^type\.a\./) },
    });
    expect(JSON.stringify(r).length).toBeLessThan(1000);
  });

  it.each([
    ['not json', 'frame is not valid JSON', undefined],
    ['[1,2]', 'a frame is one JSON object with a string "type"', 'type'],
    ['null', 'a frame is one JSON object with a string "type"', 'type'],
    ['{"type":{"a":1}}', expect.stringContaining('type: expected a string'), 'type'],
    ['{"type":"nope"}', 'unknown frame type "nope"', 'type'],
    ['{"type":"message","content":"x"}', expect.stringContaining('client_message_id'), 'client_message_id'],
    ['{"type":"cancel","type":"message"}', 'type: duplicate key "type"', 'type'],
    ['{"type":"cancel","__proto__":{"x":1}}', expect.stringContaining('__proto__'), '__proto__'],
    ['{"type":"resume","last_seq":-1}', expect.stringContaining('last_seq'), 'last_seq'],
  ])('%s → invalid_input: %s (field %s)', (text, message, field) => {
    expect(parseClientFrame(frame(text))).toEqual({
      ok: false,
      error: { code: 'invalid_input', message, ...(field ? { field } : {}) },
    });
  });

  it('refuses invalid UTF-8 in text and binary frames alike, accepts a BOM and odd but valid unicode', () => {
    expect(parseClientFrame(Buffer.from([0x7b, 0xc3, 0x28, 0x7d]))).toMatchObject({
      ok: false,
      error: { code: 'invalid_input', message: 'frame is not valid UTF-8' },
    });
    const odd = '\u0000\ud800\u00a0\u2028\ufeff\u202e';
    const r = parseClientFrame(
      frame(`\ufeff${JSON.stringify({ type: 'message', client_message_id: 'a', content: odd })}`),
    );
    expect(r).toEqual({ ok: true, frame: { type: 'message', client_message_id: 'a', content: odd } });
    expect(parseClientFrame([frame('{"type":'), frame('"cancel"}')])).toEqual({ ok: true, frame: { type: 'cancel' } });
  });

  it('echoes at most 64 characters of an unknown type', () => {
    const r = parseClientFrame(frame(JSON.stringify({ type: 'x'.repeat(100_000) })));
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r).length).toBeLessThan(200);
  });

  it('never throws; accepts exactly the frames the contract accepts, when their structure is clean (generated)', () => {
    const type = fc.constantFrom(
      'message',
      'cancel',
      'resume',
      'approve_tool',
      'select_client',
      'regenerate',
      'edit',
      'nope',
    );
    const frameLike = fc.record(
      {
        type: fc.oneof(type, fc.jsonValue({ maxDepth: 3 })),
        client_message_id: fc.oneof(fc.string({ maxLength: 140 }), fc.jsonValue()),
        content: fc.string(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(frameLike, fc.jsonValue({ maxDepth: 4 })), (value) => {
        const text = JSON.stringify(value);
        const r = parseClientFrame(frame(text));
        const contract = ClientFrame.safeParse(JSON.parse(text));
        if (r.ok) expect(r.frame).toEqual(contract.data);
        else {
          expect(r.error.code).toBe('invalid_input');
          if (!text.includes('__proto__')) expect(contract.success).toBe(false);
          if (value !== null && typeof value === 'object' && !Array.isArray(value)) expect(r.error.field).toBeTruthy();
          // the refused frame's own id is named when it starts a turn and the id itself is valid, else nothing is echoed
          const v = value as { type?: unknown; client_message_id?: unknown } | null;
          const names =
            typeof v === 'object' &&
            v !== null &&
            !Array.isArray(v) &&
            ['message', 'regenerate', 'edit'].includes(v.type as string) &&
            ClientMessageId.safeParse(v.client_message_id).success;
          expect(r.error.client_message_id).toBe(names ? v.client_message_id : undefined);
        }
      }),
      { seed, numRuns: 3000 },
    );
  });
});

describe('parseClientFrame: a refused frame that starts a turn names its client_message_id', () => {
  it('a message too long, an edit without its message, a regenerate with a bad field: named; an invalid id is not echoed', () => {
    const refused = (v: unknown) => {
      const r = parseClientFrame(frame(JSON.stringify(v)));
      if (r.ok) throw new Error('accepted');
      return r.error;
    };
    expect(refused({ type: 'message', client_message_id: 'c1', content: 'x'.repeat(600 * 1024) })).toMatchObject({
      code: 'invalid_input',
      field: 'content',
      client_message_id: 'c1',
    });
    expect(refused({ type: 'edit', client_message_id: 'c2', content: 'x' })).toMatchObject({ client_message_id: 'c2' });
    expect(refused({ type: 'message', client_message_id: 'c3', content: 'x', delivery: 'later' })).toMatchObject({
      client_message_id: 'c3',
    });
    expect(refused({ type: 'message', client_message_id: 'x'.repeat(129), content: 'x' })).not.toHaveProperty(
      'client_message_id',
    );
    expect(refused({ type: 'approve_tool', client_message_id: 'c4' })).not.toHaveProperty('client_message_id');
  });
});

describe('frameErrorOf: a handler failure → the error event', () => {
  it('keeps coded errors, names an unavailable service, hides anything else as internal', () => {
    expect(frameErrorOf(new ApiError('not_found', 'tool call not found'))).toEqual({
      error: { code: 'not_found', message: 'tool call not found' },
      unexpected: false,
    });
    expect(frameErrorOf(new RemoteError({ code: 'conflict', message: 'already answered' }))).toEqual({
      error: { code: 'conflict', message: 'already answered' },
      unexpected: false,
    });
    expect(frameErrorOf(new BusRequestError('timeout', 'session.submit', 'timed out')).error.code).toBe('unavailable');
    expect(frameErrorOf(new RangeError('Maximum call stack size exceeded'))).toEqual({
      error: { code: 'internal', message: 'internal error' },
      unexpected: true,
    });
  });
});
