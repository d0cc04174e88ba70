import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { due, outboxReducer, RETRY, type MessageFrame, type OutboxAction, type Outgoing } from './outbox';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const frame = (cid: string): MessageFrame => ({ type: 'message', client_message_id: cid, content: `text ${cid}` });

/** A socket that is open or not, and a server that acks or not, driven step by step. */
function simulate(steps: Array<{ open: boolean; ackArrives: boolean; dt: number }>) {
  let list: Outgoing[] = [];
  let now = 0;
  const sent: string[] = [];
  const stored = new Set<string>();
  const act = (a: OutboxAction) => (list = outboxReducer(list, a));
  act({ type: 'add', frame: frame('m1'), now });
  let wasOpen = false;
  for (const step of steps) {
    now += step.dt;
    if (step.open && !wasOpen) act({ type: 'reconnected', now });
    wasOpen = step.open;
    act({ type: 'tick', now });
    if (!step.open) continue;
    for (const f of due(list, now)) {
      sent.push(f.client_message_id);
      act({ type: 'sent', cid: f.client_message_id, now });
      stored.add(f.client_message_id); // the server stores it once, whatever the repeats
      if (step.ackArrives) act({ type: 'acked', cid: f.client_message_id });
    }
  }
  return { list, sent, stored };
}

describe('outbox: unacknowledged messages re-sent with their client_message_id', () => {
  it('re-sends after the ack timeout with backoff, then fails after the bound; a manual retry starts again', () => {
    let list = outboxReducer([], { type: 'add', frame: frame('a'), now: 0 });
    const times: number[] = [];
    for (let now = 0; now < 120_000; now += 100) {
      list = outboxReducer(list, { type: 'tick', now });
      for (const f of due(list, now)) {
        times.push(now);
        list = outboxReducer(list, { type: 'sent', cid: f.client_message_id, now });
      }
    }
    expect(times).toHaveLength(RETRY.maxTries);
    // the gaps grow (backoff)
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps).toEqual([...gaps].sort((x, y) => x - y));
    expect(list[0]!.state).toBe('failed');
    list = outboxReducer(list, { type: 'retry', cid: 'a', now: 200_000 });
    expect(due(list, 200_000).map((f) => f.client_message_id)).toEqual(['a']);
  });

  it('a refusal naming the message fails it with the error, it is not sent again; a retry clears the error', () => {
    let list = outboxReducer([], { type: 'add', frame: frame('c1'), now: 0 });
    list = outboxReducer(list, { type: 'sent', cid: 'c1', now: 0 });
    list = outboxReducer(list, { type: 'refused', cid: 'c1', message: 'content: too long (invalid_input)' });
    expect(list).toMatchObject([{ state: 'failed', refused: 'content: too long (invalid_input)' }]);
    expect(due(list, 1e9)).toEqual([]);
    expect(outboxReducer(list, { type: 'refused', cid: 'other', message: 'x' })).toBe(list);
    list = outboxReducer(list, { type: 'retry', cid: 'c1', now: 5 });
    expect(list[0]).toMatchObject({ state: 'pending', refused: undefined });
  });

  it('a tick or a reconnect that changes nothing keeps the same list (no render every tick)', () => {
    const empty: Outgoing[] = [];
    expect(outboxReducer(empty, { type: 'tick', now: 1 })).toBe(empty);
    const one = outboxReducer([], { type: 'add', frame: frame('a'), now: 0 });
    const sent = outboxReducer(one, { type: 'sent', cid: 'a', now: 0 });
    expect(outboxReducer(sent, { type: 'tick', now: 1 })).toBe(sent);
  });

  it('an ack (a duplicate one too) or the echo takes it out; a reconnect sends what waits at once', () => {
    let list = outboxReducer([], { type: 'add', frame: frame('a'), now: 0 });
    list = outboxReducer(list, { type: 'sent', cid: 'a', now: 0 });
    expect(due(list, 1)).toEqual([]);
    list = outboxReducer(list, { type: 'reconnected', now: 10 });
    expect(due(list, 10).map((f) => f.client_message_id)).toEqual(['a']);
    expect(outboxReducer(list, { type: 'acked', cid: 'a' })).toEqual([]);
    // adding the same id twice keeps one
    expect(outboxReducer(list, { type: 'add', frame: frame('a'), now: 20 })).toHaveLength(1);
  });

  it('property: whatever the socket and the acks do, every send carries the one id, sends are bounded, and the message ends acked or failed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ open: fc.boolean(), ackArrives: fc.boolean(), dt: fc.integer({ min: 0, max: 20_000 }) }), {
          maxLength: 60,
        }),
        (steps) => {
          const { list, sent, stored } = simulate([...steps, { open: true, ackArrives: true, dt: 60_000 }]);
          expect(new Set(sent)).toEqual(new Set(sent.length ? ['m1'] : []));
          expect(stored.size).toBeLessThanOrEqual(1);
          // bounded: at most maxTries per manual start (no manual retry here) plus the reconnects never add tries
          expect(sent.length).toBeLessThanOrEqual(RETRY.maxTries);
          expect(list.length === 0 || list[0]!.state === 'failed').toBe(true);
        },
      ),
      { seed: SEED, numRuns: 3000 },
    );
  });
});
