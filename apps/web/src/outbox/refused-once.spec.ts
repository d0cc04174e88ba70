import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { chatReducer, initialChat, type ChatState } from '../chat-state';
import { foldFrames } from '../testing/frames';
import { outboxReducer, timelineItems, type Outgoing } from './outbox';

const SID = '00000000-0000-4000-8000-00000000000a';
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

/** Every place the screen says why a message was refused: the chat's notices and the outbox rows. */
function told(st: ChatState, list: Outgoing[], why: string): number {
  const notices = timelineItems(st.items, list).filter((i) => i.kind === 'notice' && i.text === why).length;
  const rows = list.filter((o) => o.refused?.startsWith(why)).length;
  return notices + rows;
}

describe('a refused message is told once', () => {
  it('the row of the message says it was not sent and why; the chat adds no second notice', () => {
    const why = 'content: too long';
    const st = foldFrames([
      { type: 'hello', session_id: SID },
      { type: 'error', code: 'invalid_input', message: why, field: 'content', client_message_id: 'c1' },
    ]);
    let list = outboxReducer([], { type: 'add', frame: { type: 'message', client_message_id: 'c1', content: 'x' } });
    list = outboxReducer(list, { type: 'refused', cid: 'c1', message: `${why} (invalid_input)` });
    expect(told(st, list, why)).toBe(1);
    expect(timelineItems(st.items, list).some((i) => i.kind === 'notice')).toBe(false);
    // retried: the row is pending again, nothing says "not sent"; a second refusal says it once more, once
    list = outboxReducer(list, { type: 'retry', cid: 'c1' });
    expect(list.some((o) => o.refused)).toBe(false);
  });

  it('a refused regenerate or edit has no outbox row: its notice stays', () => {
    const st = foldFrames([
      { type: 'hello', session_id: SID },
      { type: 'error', code: 'not_found', message: 'nothing to regenerate', client_message_id: 'r1' },
    ]);
    expect(told(st, [], 'nothing to regenerate')).toBe(1);
  });

  it('property: any refusals, of messages with a row or without, in any order and repeated: each is told once', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ cid: fc.constantFrom('a', 'b', 'c', 'd'), withRow: fc.boolean() }), { maxLength: 12 }),
        (refusals) => {
          let st = chatReducer(initialChat, { type: 'hello', protocol: 1, server_version: 't', session_id: SID });
          let list: Outgoing[] = [];
          const rowed = new Set(refusals.filter((r) => r.withRow).map((r) => r.cid));
          for (const cid of rowed)
            list = outboxReducer(list, {
              type: 'add',
              frame: { type: 'message', client_message_id: cid, content: cid },
            });
          for (const r of refusals) {
            st = chatReducer(st, {
              type: 'error',
              code: 'invalid_input',
              message: `bad ${r.cid}`,
              client_message_id: r.cid,
            });
            if (rowed.has(r.cid)) list = outboxReducer(list, { type: 'refused', cid: r.cid, message: `bad ${r.cid}` });
          }
          for (const cid of new Set(refusals.map((r) => r.cid))) expect(told(st, list, `bad ${cid}`)).toBe(1);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});
