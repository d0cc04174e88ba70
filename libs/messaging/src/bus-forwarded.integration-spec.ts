/**
 * `subscribeForwarded` over a real NATS: what `publish` sent reaches the handler as the same JSON
 * text with its envelope; what is not UTF-8 JSON with an envelope, or carries a prototype key, is
 * dropped with a warning and never reaches the handler; a handler that throws is logged and the
 * subscription goes on.
 */
import { randomUUID } from 'node:crypto';
import { readSessionEventEnvelope, SessionEventSchema, topicOf, type SessionEventEnvelope } from '@skald/contracts';
import { NatsBus } from './bus';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

describe('NatsBus.subscribeForwarded', () => {
  const warned: string[] = [];
  const failed: string[] = [];
  const log = {
    warn: (o: object) => void warned.push(String((o as { issue?: string }).issue)),
    error: (o: object) => void failed.push(String((o as { err?: string }).err)),
  };
  let bus: NatsBus;
  beforeAll(async () => {
    bus = await NatsBus.connect({ servers: NATS_URL, name: `bus-fwd-spec-${randomUUID()}` }, log);
  });
  afterAll(async () => {
    await bus.drain();
  });

  it('hands on the published text, drops the invalid with a warning, survives a throwing handler', async () => {
    const sessionId = randomUUID();
    const to = topicOf('sessionEvents', randomUUID(), sessionId);
    const subject = to.subject;
    const got: Array<{ text: string; envelope: SessionEventEnvelope; sentAt: number | null }> = [];
    bus.subscribeForwarded(to, readSessionEventEnvelope, (text, envelope, _s, meta) => {
      if (envelope.seq === 3) throw new Error('handler broke');
      got.push({ text, envelope, sentAt: meta.sentAt });
    });
    const event = { type: 'file_changed', path: 'a.txt', session_id: sessionId, seq: 1 } as const;
    const before = Date.now();
    bus.publish(to, event);
    const after = Date.now();
    for (const junk of [
      new Uint8Array([0xff, 0xfe]),
      new TextEncoder().encode('{"type":'),
      new TextEncoder().encode(JSON.stringify({ ...event, seq: 0 })),
      new TextEncoder().encode(`{"__proto__":{"x":1},${JSON.stringify(event).slice(1)}`),
    ])
      bus.nc.publish(subject, junk);
    bus.publish(to, { ...event, seq: 3 });
    bus.publish(to, { ...event, seq: 2 });
    await bus.nc.flush();
    for (let i = 0; i < 100 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    // the publisher's bytes: its schema's output (keys in the schema's order), as JSON
    const sent = (seq: number) => JSON.stringify(SessionEventSchema.parse({ ...event, seq }));
    expect(got.map((g) => g.text)).toEqual([sent(1), sent(2)]);
    expect(got[0].envelope).toEqual({ type: 'file_changed', session_id: sessionId, seq: 1 });
    // the publisher's stamp, read from the raw header block as it came from the server
    expect(got[0].sentAt).toBeGreaterThanOrEqual(before);
    expect(got[0].sentAt).toBeLessThanOrEqual(after);
    expect(warned).toEqual(['not_utf8', 'not_json', 'no_envelope', 'prototype_key']);
    expect(failed).toEqual(['Error: handler broke']);
  });
});
