import { execFileSync } from 'node:child_process';
import { DataSource } from 'typeorm';

const TERMINAL = ['done', 'failed', 'rejected', 'cancelled', 'interrupted'];

/**
 * The invariants of RELIABILITY.md, checked against the database (and the process table) after a
 * test. Returns the list of violations so a failing test names every one of them.
 *
 * - I1 every tool call of a finished turn has exactly one terminal status;
 * - I3 lease epochs only grow: along a session's (append-only) history the stamped epoch never
 *   decreases, and no two live owners share an epoch;
 * - I4 no turn stays `running` with a lease that expired more than `stuckAfterMs` ago;
 * - I5 a session's event seqs are 1..last_seq, no gaps, no duplicates;
 * - I6 no sandbox process (bwrap) outlives its call;
 * - I7 every row of a session belongs to the session's user (inbox rows are the only rows that
 *   name a user; the rest hang off the session).
 * I2 (a side effect at most once) is asserted by the tests that cause side effects (marker files).
 */
export async function invariantViolations(db: DataSource, opts: { stuckAfterMs?: number } = {}): Promise<string[]> {
  const out: string[] = [];
  const q = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => db.query<T[]>(sql, params);

  for (const r of await q<{ id: string; status: string }>(
    `SELECT c.id, c.status FROM tool_calls c JOIN sessions s ON s.id = c.session_id
      WHERE s.turn_state = 'finished' AND c.status <> ALL($1::text[])`,
    [TERMINAL],
  )) {
    out.push(`I1: tool call ${r.id} of a finished turn is ${r.status}`);
  }

  for (const r of await q<{ session_id: string; ord: string; epoch: string; prev: string }>(
    `SELECT session_id, ord, epoch, prev FROM (
       SELECT session_id, ord, epoch, lag(epoch) OVER (PARTITION BY session_id ORDER BY ord) AS prev FROM chat_history) h
      WHERE prev IS NOT NULL AND epoch < prev`,
  )) {
    out.push(`I3: session ${r.session_id} history row ${r.ord} written under epoch ${r.epoch} after epoch ${r.prev}`);
  }

  for (const r of await q<{ id: string }>(
    `SELECT s.id FROM sessions s JOIN session_leases l ON l.session_id = s.id
      WHERE s.turn_state = 'running' AND l.expires_at < now() - $1 * interval '1 millisecond'`,
    [opts.stuckAfterMs ?? 30_000],
  )) {
    out.push(`I4: session ${r.id} is running with a lease that expired long ago`);
  }

  for (const r of await q<{ id: string; last_seq: string; n: string; max: string | null; min: string | null }>(
    `SELECT s.id, s.last_seq, count(e.seq) AS n, max(e.seq) AS max, min(e.seq) AS min
       FROM sessions s LEFT JOIN session_events e ON e.session_id = s.id
      GROUP BY s.id, s.last_seq
     HAVING count(e.seq) <> s.last_seq OR coalesce(max(e.seq), 0) <> s.last_seq OR (count(e.seq) > 0 AND min(e.seq) <> 1)`,
  )) {
    out.push(`I5: session ${r.id} has ${r.n} events for last_seq ${r.last_seq} (min ${r.min}, max ${r.max})`);
  }

  for (const r of await q<{ id: string }>(
    `SELECT i.id FROM session_inbox i JOIN sessions s ON s.id = i.session_id WHERE i.user_id <> s.user_id`,
  )) {
    out.push(`I7: inbox row ${r.id} names a user other than its session's`);
  }

  // Live sandboxes of this test process's stacks (its descendants), and orphans (reparented to
  // init): a zombie (state Z) has already exited and holds nothing but its pid entry. Sandboxes of
  // other test runs on the machine are theirs to check.
  const procs = execFileSync('ps', ['-eo', 'pid=,ppid=,stat=,comm=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [pid, ppid, stat, comm] = l.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), stat: stat ?? '', comm: comm ?? '', line: l.trim() };
    });
  const parentOf = new Map(procs.map((p) => [p.pid, p.ppid]));
  const ours = (pid: number): boolean => {
    for (let p = parentOf.get(pid), hops = 0; p !== undefined && p > 1 && hops < 64; p = parentOf.get(p), hops++)
      if (p === process.pid) return true;
    return parentOf.get(pid) === 1;
  };
  const sandboxes = procs
    .filter((p) => p.comm === 'bwrap' && !p.stat.startsWith('Z') && ours(p.pid))
    .map((p) => p.line)
    .join('\n');
  if (sandboxes) out.push(`I6: sandbox processes still running:\n${sandboxes}`);
  return out;
}

/** Fails the test with every violation listed. */
export async function assertInvariants(db: DataSource, opts?: { stuckAfterMs?: number }): Promise<void> {
  const violations = await invariantViolations(db, opts);
  if (violations.length > 0) throw new Error(`invariants violated:\n  ${violations.join('\n  ')}`);
}

/** The end of an e2e file: the invariants hold, and the connection is closed either way. */
export async function assertInvariantsAndClose(db: DataSource | undefined): Promise<void> {
  if (!db) return;
  try {
    await assertInvariants(db);
  } finally {
    await db.destroy();
  }
}
