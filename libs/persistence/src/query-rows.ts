/** Anything with TypeORM's `query` (a DataSource, an EntityManager, a QueryRunner). */
export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * Runs SQL and returns its rows. TypeORM's postgres driver answers UPDATE / DELETE with
 * `[rows, affectedCount]` but SELECT / INSERT with the rows alone; this evens that out so a
 * `RETURNING` clause can be trusted whatever the statement.
 */
export async function queryRows<T = Record<string, unknown>>(
  db: Queryable,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const result = await db.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
    return result[0] as T[];
  return result as T[];
}
