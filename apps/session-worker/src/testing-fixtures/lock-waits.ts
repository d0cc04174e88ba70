import type { DataSource } from 'typeorm';

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
