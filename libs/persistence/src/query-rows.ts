/** Anything with TypeORM's `query` (a DataSource, an EntityManager, a QueryRunner). */
export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * What stands in for the last parameter of {@link queryRows} and {@link preparedRows} when the call names no row
 * type: the call then does not compile. Name the generated row type of the table (`UsersRow`), or a `Pick<>` of it.
 */
export type RowTypeRequired<T> = [T] extends [never]
  ? [rowTypeRequired: 'name the row type: queryRows<UsersRow>(…)']
  : [];

/**
 * Runs SQL and returns its rows, typed as the row type the call names (a generated row type or a `Pick<>` of it;
 * a call without one does not compile). TypeORM's postgres driver answers UPDATE / DELETE with
 * `[rows, affectedCount]` but SELECT / INSERT with the rows alone; this evens that out so a
 * `RETURNING` clause can be trusted whatever the statement.
 */
export async function queryRows<T extends object = never>(
  db: Queryable,
  sql: string,
  params: unknown[] = [],
  ..._: RowTypeRequired<T>
): Promise<NoInfer<T>[]> {
  const result = await db.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
    return result[0] as T[];
  return result as T[];
}

/** node-postgres' pool or client under TypeORM's postgres driver: named statements need it directly. */
interface PgQueryable {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/** Anything holding TypeORM's postgres driver (a DataSource). */
export interface PgDriverHolder {
  driver: unknown;
}

/** A transaction's EntityManager: its query runner holds the connection the transaction runs on. */
export interface PgTransactionHolder {
  queryRunner?: { databaseConnection?: unknown } | null;
  connection: PgDriverHolder;
}

/**
 * Runs a named (prepared) statement and returns its rows: Postgres parses and plans it once per
 * connection and afterwards only binds and executes it. A name stands for one text for good — a
 * connection keeps the statement it prepared, so a changed text needs a new name (`…_v2`).
 * Parameters are passed as they are (no text codec here: see `pgParams`); the rows are typed as the row type the
 * call names, like {@link queryRows}'s. Given a transaction's
 * EntityManager, it runs on that transaction's connection; given a DataSource, on the pool.
 */
export async function preparedRows<T extends object = never>(
  db: PgDriverHolder | PgTransactionHolder,
  name: string,
  text: string,
  values: unknown[],
  ..._: RowTypeRequired<T>
): Promise<NoInfer<T>[]> {
  const inTransaction =
    'connection' in db ? (db.queryRunner?.databaseConnection as PgQueryable | undefined) : undefined;
  const driver = 'driver' in db ? db.driver : db.connection.driver;
  const target = inTransaction ?? (driver as { master: PgQueryable }).master;
  const { rows } = await target.query({ name, text, values });
  return rows as T[];
}
