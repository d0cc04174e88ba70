import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { queryRows } from '@skald/persistence/query-rows';
import type { KnownToolsRow } from '@skald/persistence';

/** Discovered tool names kept per user; past this the least recently offered are deleted. */
export const KNOWN_TOOLS_PER_USER = 500;
/** Advisory-lock namespace of a user's known-tools writes (the first key of `pg_advisory_xact_lock(int, int)`). */
const KNOWN_TOOLS_LOCK_NS = 0x534b4b54; // "SKKT"
/** Names an admin's catalogue lists at most (every tenant's together). */
const ADMIN_LIST_MAX = 5000;

@Injectable()
export class KnownToolsRepository {
  constructor(private readonly ds: Database) {}

  /**
   * Records names offered to `userId`'s model (their `last_seen_at` refreshed), then trims the user's
   * names to `KNOWN_TOOLS_PER_USER`, evicting the least recently offered (the ones just written are
   * the most recent, so a flood keeps its newest names). One transaction under a per-user advisory
   * lock: the writes of every replica for one user follow one another, so the bound holds at every
   * commit (two replicas' inserts interleaved before their trims left up to twice the bound).
   */
  async upsert(userId: string, tools: ReadonlyArray<{ name: string; category: string }>): Promise<void> {
    if (tools.length === 0) return;
    await this.ds.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [KNOWN_TOOLS_LOCK_NS, userId]);
      await tx.query(
        // the clock, not the transaction's start: a write that waited for the lock is the newer one
        `INSERT INTO known_tools (user_id, name, category, last_seen_at)
         SELECT $1, n, c, clock_timestamp() FROM unnest($2::text[], $3::text[]) AS t(n, c)
         ON CONFLICT (user_id, name) DO UPDATE SET last_seen_at = clock_timestamp()`,
        [userId, tools.map((t) => t.name), tools.map((t) => t.category)],
      );
      await tx.query(
        `DELETE FROM known_tools WHERE user_id = $1 AND name IN (
           SELECT name FROM known_tools WHERE user_id = $1
           ORDER BY last_seen_at DESC, name OFFSET $2)`,
        [userId, KNOWN_TOOLS_PER_USER],
      );
    });
  }

  /** The names offered to one user; for an admin (`userId` null) every user's, each name once. */
  async list(userId: string | null): Promise<Array<{ name: string; category: string }>> {
    if (userId === null)
      return queryRows<Pick<KnownToolsRow, 'name' | 'category'>>(
        this.ds,
        `SELECT DISTINCT ON (name) name, category FROM known_tools ORDER BY name LIMIT ${ADMIN_LIST_MAX}`,
      );
    return queryRows<Pick<KnownToolsRow, 'name' | 'category'>>(
      this.ds,
      `SELECT name, category FROM known_tools WHERE user_id = $1 ORDER BY name LIMIT ${KNOWN_TOOLS_PER_USER}`,
      [userId],
    );
  }

  /** How many names a user has (for tests of the bound). */
  async count(userId: string): Promise<number> {
    const [row] = await queryRows<{ n: string }>(this.ds, `SELECT count(*) AS n FROM known_tools WHERE user_id = $1`, [
      userId,
    ]);
    return Number(row.n);
  }
}
