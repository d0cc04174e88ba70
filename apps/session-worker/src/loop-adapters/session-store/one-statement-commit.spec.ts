import { randomUUID } from 'node:crypto';
import { allShapes, commitOfShape, type ShapeContext } from '../../testing-fixtures/commit-shapes';
import { fitsOneStatement, oneStatementCommit, shapeName } from './one-statement-commit';

const ctx: ShapeContext = {
  sessionId: randomUUID(),
  userId: randomUUID(),
  frameId: randomUUID(),
  messageId: randomUUID(),
  callIds: [randomUUID(), randomUUID(), randomUUID()],
  inboxIds: [randomUUID(), randomUUID()],
};
const fence = { owner: 'w', epoch: 7 };

describe('one-statement commit shapes', () => {
  const shapes = allShapes();

  it('every shape is a statement of its own name, with only the parts it writes', () => {
    const names = new Set<string>();
    for (const shape of shapes) {
      const { mutations, events, usage } = commitOfShape(shape, ctx, 1);
      expect(fitsOneStatement(mutations)).toBe(true);
      const s = oneStatementCommit(ctx.sessionId, fence, mutations, events, usage);
      expect(s.name).toBe(shapeName(new Set(shape)));
      names.add(s.name);
      for (const [part, cte] of [
        ['i', 'claim AS'],
        ['f', 'frames AS'],
        ['e', 'appended AS'],
        ['m', 'messages AS'],
        ['c', 'calls AS'],
        ['l', 'usage AS'],
      ] as const)
        expect(s.text.includes(cte)).toBe(shape.includes(part));
      expect(s.text.includes('updates AS')).toBe(shape.includes('u') || shape.includes('U'));
      expect(s.text.includes('head AS')).toBe(shape.includes('e') || shape.includes('t'));
      // Every parameter the text names is bound, and every bound one is named.
      const used = new Set([...s.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      expect([...used].sort((a, b) => a - b)).toEqual(s.values.map((_, i) => i + 1));
    }
    expect(names.size).toBe(shapes.length);
  });

  it("a shape's text does not depend on its rows: one name is one text", () => {
    for (const shape of shapes) {
      const one = commitOfShape(shape, ctx, 1);
      const two = commitOfShape(shape, ctx, 2);
      const a = oneStatementCommit(ctx.sessionId, fence, one.mutations, one.events, one.usage);
      const b = oneStatementCommit(randomUUID(), { owner: 'x', epoch: 9 }, two.mutations, two.events, two.usage);
      expect(b.name).toBe(a.name);
      expect(b.text).toBe(a.text);
      expect(b.values.length).toBe(a.values.length);
    }
  });

  it('the fence is in every write: each data-modifying part waits for `go`, and `go` for the fence', () => {
    const every = commitOfShape(['i', 'f', 'e', 't', 'm', 'c', 'U', 'l'], ctx, 2);
    const { text } = oneStatementCommit(ctx.sessionId, fence, every.mutations, every.events, every.usage);
    const parts = text.split(/\n (?=\w+ AS \()/);
    const writes = parts.filter((p) => /^(\w+) AS \(\s*(INSERT|UPDATE|DELETE)/.test(p));
    expect(writes.map((p) => p.slice(0, p.indexOf(' ')))).toEqual([
      'settled',
      'frames',
      'head',
      'appended',
      'messages',
      'calls',
      'updates',
      'usage',
    ]);
    for (const part of writes)
      expect(part.includes('(SELECT ok FROM go)') || part.startsWith('appended AS (')).toBe(true);
    // The events are inserted from `head`, which is written only under `go`.
    expect(parts.find((p) => p.startsWith('appended AS ('))).toContain('FROM head,');
    expect(parts.find((p) => p.startsWith('go AS ('))).toContain('EXISTS (SELECT 1 FROM fence)');
  });
});
