import { decodeRow, pgParams, Queryable, queryRows as rawQueryRows } from '@skald/persistence';
import type { Row } from './session-rows';

/**
 * Every read and write of this store goes through the text codec of `@skald/persistence`: a string
 * holding NUL or a lone surrogate (from a model, a tool or a user) is stored losslessly.
 */
export async function queryRows<T = Row>(db: Queryable, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await rawQueryRows<T>(db, sql, pgParams(params))).map(decodeRow);
}

export async function exec(db: Queryable, sql: string, params: unknown[]): Promise<void> {
  await db.query(sql, pgParams(params));
}
