import fc from 'fast-check';
import { DecisionsReply } from '@skald/contracts';
import { storedRequest } from '../testing-fixtures/stored-request';
import { decisionItems } from './decision-items';

const at = new Date('2026-12-07T10:00:00Z');
const USER = '00000000-0000-4000-8b00-000000000001';
const uuid = (n: number, kind: 'a' | 'c') => `00000000-0000-4000-8${kind}00-${String(n).padStart(12, '0')}`;
const answered = (n: number, over: Parameters<typeof storedRequest>[0] = {}) =>
  storedRequest({
    id: uuid(n, 'a'),
    toolCallId: uuid(n, 'c'),
    toolName: 'write_file',
    arguments: JSON.stringify({ path: 'a.txt', content: 'new' }),
    preview: { path: '/workspace/a.txt', old_content: 'old', new_content: 'new', base_hash: 'h' },
    status: 'approved',
    actorUserId: USER,
    resolvedAt: at,
    channel: 'card',
    ...over,
  });

describe('decisionItems: the settled cards of the chat history', () => {
  it('carries who answered, where, and the diff the card showed (without the base hash)', () => {
    expect(decisionItems([answered(1)])).toEqual([
      {
        tool_call_id: uuid(1, 'c'),
        request_id: uuid(1, 'a'),
        status: 'approved',
        decision: { by_user_id: USER, at: at.toISOString(), channel: 'card' },
        preview: { path: '/workspace/a.txt', old_content: 'old', new_content: 'new' },
      },
    ]);
  });

  it("names a rejection's note and an edited approval, and drops the edited call's stale preview", () => {
    const [rejected, edited] = decisionItems([
      answered(1, { status: 'rejected', note: 'not that file' }),
      answered(2, { editedArguments: JSON.stringify({ path: 'b.txt', content: 'x' }), editDiff: '…' }),
    ]);
    expect(rejected.decision?.note).toBe('not that file');
    expect(edited.decision?.edited).toBe(true);
    expect(edited.preview).toBeUndefined();
  });

  it('leaves out requests still pending and a preview of an unknown shape', () => {
    const items = decisionItems([answered(1, { status: 'pending' }), answered(2, { preview: { path: 1 } })]);
    expect(items.map((i) => i.request_id)).toEqual([uuid(2, 'a')]);
    expect(items[0].preview).toBeUndefined();
  });

  it('keeps the previews within the bound, the newest calls first, and every reply valid', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 400 }), { maxLength: 40 }), fc.nat({ max: 4000 }), (sizes, bound) => {
        const rows = sizes.map((n, i) =>
          answered(i, { preview: { path: `/workspace/${i}`, new_content: 'x'.repeat(n) } }),
        );
        const items = decisionItems(rows, bound);
        expect(DecisionsReply.safeParse({ items }).success).toBe(true);
        expect(items).toHaveLength(rows.length);
        const shown = items.reduce((n, i) => n + (i.preview?.new_content.length ?? 0), 0);
        expect(shown).toBeLessThanOrEqual(bound);
        // a preview left out never fits beside the newer ones that were kept
        let used = 0;
        for (let i = items.length - 1; i >= 0; i--) {
          if (items[i].preview) used += sizes[i];
          else expect(used + sizes[i]).toBeGreaterThan(bound);
        }
      }),
      { seed: 4223, numRuns: 2000 },
    );
  });
});
