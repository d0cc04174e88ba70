import type { DataSource, QueryRunner } from 'typeorm';

/** The backend (`pg_backend_pid()`) of a query runner's connection: the `holder` the waits below name. */
export async function backendPid(qr: QueryRunner): Promise<number> {
  const [r] = (await qr.query(`SELECT pg_backend_pid() AS pid`)) as Array<{ pid: number }>;
  return r.pid;
}

/**
 * Waits until at least `n` backends wait, directly or through one another, on a lock held by the
 * backend `holder` (a test's blocking transaction): only this test's statements are counted, not
 * those of specs running beside it on the same database. Bounded: 2 s, then a clear error.
 */
export async function waitingOn(ds: DataSource, holder: number, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [r] = await ds.query<Array<{ n: number }>>(
      `WITH RECURSIVE w(pid) AS (
         SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))
         UNION SELECT a.pid FROM pg_stat_activity a, w WHERE w.pid = ANY (pg_blocking_pids(a.pid)))
       SELECT count(*)::int AS n FROM w`,
      [holder],
    );
    if (r.n >= n) return;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error(`fewer than ${n} statements waiting on backend ${holder} after 2 s`);
}

/**
 * The backend of a statement whose text is `LIKE queryLike` and that waits on a lock held by the
 * backend `holder`: the test's own statement, found to be terminated. A spec running beside it on
 * the same database may have the same statement waiting on a lock of its own; that backend is never
 * named here. Bounded: 5 s, then a clear error.
 */
export async function statementWaitingOn(ds: DataSource, holder: number, queryLike: string): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const [r] = await ds.query<Array<{ pid: number }>>(
      `SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)) AND query LIKE $2`,
      [holder, queryLike],
    );
    if (r) return r.pid;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`no statement like ${queryLike} waiting on backend ${holder} after 5 s`);
}
