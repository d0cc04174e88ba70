import { queryRows, type Queryable } from './query-rows';

/** A Queryable answering every statement with `result`, as TypeORM's postgres driver would. */
const answering = (result: unknown): Queryable => ({ query: () => Promise.resolve(result) });

describe('queryRows', () => {
  it("returns the rows of a SELECT and of an UPDATE … RETURNING (TypeORM's [rows, count])", async () => {
    expect(await queryRows<{ id: string }>(answering([{ id: 'a' }]), 'SELECT id FROM t')).toEqual([{ id: 'a' }]);
    expect(await queryRows<{ id: string }>(answering([[{ id: 'b' }], 1]), 'UPDATE t SET x = 1 RETURNING id')).toEqual([
      { id: 'b' },
    ]);
  });

  it('names its row type: a call without one does not compile (npm run typecheck)', async () => {
    // @ts-expect-error -- no row type named: the call asks for a fourth argument that cannot be given
    const rows = await queryRows(answering([]), 'SELECT 1');
    expect(rows).toEqual([]);
  });
});
