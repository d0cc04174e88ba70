import { decodeRow, pgParams } from '@skald/persistence/pg-text';
import { Queryable, queryRows as rawQueryRows } from '@skald/persistence/query-rows';
import type { RowTypeRequired } from '@skald/persistence';

/**
 * Every read and write of this store goes through the text codec of `@skald/persistence`: a string
 * holding NUL or a lone surrogate (from a model, a tool or a user) is stored losslessly.
 */
export async function queryRows<T extends object = never>(
  db: Queryable,
  sql: string,
  params: unknown[] = [],
  ...required: RowTypeRequired<T>
): Promise<NoInfer<T>[]> {
  return (await rawQueryRows<T>(db, sql, pgParams(params), ...required)).map(decodeRow);
}

export async function exec(db: Queryable, sql: string, params: unknown[]): Promise<void> {
  await db.query(sql, pgParams(params));
}
