import fc from 'fast-check';
import type { MessageRow, ToolCallRow } from '@skald/agent-loop';
import { HistoryCarry, type CarriedHistory } from './history-carry';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const message = (frameId: string, content: string): MessageRow => ({
  id: `${frameId}-${content.length}`,
  sessionId: 's',
  frameId,
  role: 'user',
  content,
  reasoningContent: null,
  status: 'ok',
  isSynthetic: false,
  attachments: null,
  clientMessageId: null,
  inputTokens: null,
  outputTokens: null,
  createdAt: '2026-01-01T00:00:00.000Z',
});

const history = (tag: string, size = 1): CarriedHistory =>
  new Map([[`f-${tag}`, { messages: [message(`f-${tag}`, 'x'.repeat(size))], toolCalls: [] as ToolCallRow[] }]]);

type Op =
  | { k: 'keep'; session: number; epoch: number; size: number }
  | { k: 'take'; session: number; epoch: number }
  | { k: 'tick'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant('keep' as const), session: fc.nat(4), epoch: fc.nat(6), size: fc.nat(300) }),
  fc.record({ k: fc.constant('take' as const), session: fc.nat(4), epoch: fc.nat(7) }),
  fc.record({ k: fc.constant('tick' as const), ms: fc.nat(400) }),
);

/**
 * The one rule that makes carrying a history across leases safe: it is handed back only under the
 * same lease or the next one taken (epoch E or E + 1: no other holder could have written between),
 * at most once, within its age — checked against a model over generated sequences of turns, lease
 * takes by other workers (skipped epochs) and time, with the bounds on sessions and bytes.
 */
describe('HistoryCarry', () => {
  it('hands a history back only under epoch E or E + 1, once, young enough, within its bounds', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 80 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 600, max: 4000 }),
        (ops, maxSessions, maxBytes) => {
          let clock = 0;
          const ttl = 1000;
          const carry = new HistoryCarry(maxSessions, maxBytes, ttl, () => clock);
          // the model: what each session holds, in the order kept
          let model: Array<{ session: number; epoch: number; tag: string; at: number; bytes: number }> = [];
          let n = 0;
          for (const o of ops) {
            if (o.k === 'tick') {
              clock += o.ms;
            } else if (o.k === 'keep') {
              const tag = `${n++}`;
              const h = history(tag, o.size);
              model = model.filter((e) => e.session !== o.session);
              const bytes = 256 + 2 * o.size;
              if (bytes <= maxBytes) {
                model.push({ session: o.session, epoch: o.epoch, tag, at: clock, bytes });
                while (
                  model.length > maxSessions ||
                  model.reduce((a, e) => a + e.bytes, 0) > maxBytes ||
                  model[0].at < clock - ttl
                )
                  model.shift();
              }
              carry.keep(`s${o.session}`, o.epoch, h);
            } else {
              const held = model.find((e) => e.session === o.session);
              model = model.filter((e) => e.session !== o.session);
              const got = carry.take(`s${o.session}`, o.epoch);
              const valid = held && (held.epoch === o.epoch || held.epoch + 1 === o.epoch) && clock - held.at <= ttl;
              expect([...got.keys()]).toEqual(valid ? [`f-${held.tag}`] : []);
            }
            expect(carry.size).toBe(model.length);
            expect(carry.heldBytes).toBe(model.reduce((a, e) => a + e.bytes, 0));
            expect(carry.heldBytes).toBeLessThanOrEqual(maxBytes);
            expect(carry.size).toBeLessThanOrEqual(maxSessions);
          }
        },
      ),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it('another worker took the lease between (E + 2): nothing is carried', () => {
    const carry = new HistoryCarry();
    carry.keep('s', 7, history('a'));
    expect(carry.take('s', 9).size).toBe(0);
    expect(carry.take('s', 8).size).toBe(0); // dropped by the first take
  });

  it("a user's carried frame ids are those of that user's sessions still kept (for the submit's start read)", () => {
    const carry = new HistoryCarry();
    carry.keep('s1', 1, history('a'), 'u1');
    carry.keep('s2', 1, history('b'), 'u2');
    carry.keep('s3', 1, history('c'), 'u1');
    expect(carry.frameIdsOf('u1').sort()).toEqual([...history('a').keys(), ...history('c').keys()].sort());
    carry.take('s1', 2);
    expect(carry.frameIdsOf('u1')).toEqual([...history('c').keys()]);
    expect(carry.frameIdsOf('nobody')).toEqual([]);
  });
});
