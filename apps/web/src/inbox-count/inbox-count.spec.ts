import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { InboxDto } from '@skald/contracts';
import { inboxCount, inboxCountReducer, noInbox, type InboxCountAction } from './inbox-count';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const S = '00000000-0000-4000-8000-00000000000a';
const at = '2026-12-07T06:00:00.000Z';
const approval = (id: string): InboxDto['approvals'][number] => ({
  request_id: id,
  tool_call_id: id,
  session_id: S,
  source: 'web',
  tool_name: 'execute_cmd',
  arguments: {},
  created_at: at,
});
const listed = (...ids: string[]): InboxCountAction => ({
  type: 'listed',
  inbox: { approvals: ids.map(approval), clarifications: [] },
});
const requested = (id: string): InboxCountAction => ({
  type: 'approval_requested',
  request_id: id,
  tool_call_id: id,
  session_id: S,
  source: 'cli',
  tool_name: 'execute_cmd',
});
const resolved = (id: string): InboxCountAction => ({
  type: 'approval_resolved',
  request_id: id,
  tool_call_id: id,
  session_id: S,
  source: 'cli',
  approved: true,
});
const fold = (actions: InboxCountAction[]) => inboxCount(actions.reduce(inboxCountReducer, noInbox));

describe('the inbox count on the Inbox link', () => {
  it('counts what the listing holds, then follows the user events of any conversation', () => {
    expect(fold([listed('a', 'b')])).toBe(2);
    expect(fold([listed('a', 'b'), requested('c')])).toBe(3);
    expect(fold([listed('a', 'b'), requested('c'), resolved('a')])).toBe(2);
    // a question counts too
    expect(
      fold([
        listed(),
        {
          type: 'clarification_requested',
          request_id: 'q',
          tool_call_id: 'q',
          session_id: S,
          source: 'web',
          title: 'T',
        },
      ]),
    ).toBe(1);
  });

  it('a listing read before an answer does not bring the answered request back', () => {
    expect(fold([listed('a'), resolved('a'), listed('a')])).toBe(0);
    // an answer that came before its request's event: never counted
    expect(fold([resolved('z'), requested('z')])).toBe(0);
    // once a listing no longer holds it, the answer is forgotten (bounded memory)
    const st = [listed('a'), resolved('a'), listed()].reduce(inboxCountReducer, noInbox);
    expect(st.answered.size).toBe(0);
  });

  it('property: any order of events and listings, repeated: never negative, and a final listing is the truth', () => {
    const id = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    const action = fc.oneof(
      id.map(requested),
      id.map(resolved),
      fc.uniqueArray(id, { maxLength: 5 }).map((ids) => listed(...ids)),
    );
    fc.assert(
      fc.property(fc.array(action, { maxLength: 40 }), fc.uniqueArray(id, { maxLength: 5 }), (actions, truth) => {
        const st = actions.reduce(inboxCountReducer, noInbox);
        expect(inboxCount(st)).toBeGreaterThanOrEqual(0);
        expect(inboxCount(st)).toBeLessThanOrEqual(5);
        // a fresh listing after the events settled: exactly what it holds, less what was answered meanwhile
        const after = inboxCountReducer(st, listed(...truth));
        expect([...after.waiting].sort()).toEqual(truth.filter((t) => !st.answered.has(t)).sort());
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});
