import { Injectable } from '@nestjs/common';
import { Database } from '@skald/persistence/database';
import { WorkspaceLock } from './workspace-lock';

/** Advisory-lock namespace of workspace writes (the first key of `pg_advisory_lock(int, int)`). */
const WORKSPACE_LOCK_NS = 0x534b5731; // "SKW1"

/**
 * A Postgres session advisory lock per workspace, held on one pooled connection for the length of
 * the write: replicas sharing the workspace volume write one at a time, so a write's quota check
 * and its effect are not interleaved with another replica's. A runner that dies releases its lock
 * with its connection.
 */
@Injectable()
export class PgWorkspaceLock extends WorkspaceLock {
  constructor(private readonly ds: Database) {
    super();
  }

  async run<T>(userId: string, task: () => Promise<T>): Promise<T> {
    const qr = this.ds.createQueryRunner();
    await qr.connect();
    try {
      await qr.query('SELECT pg_advisory_lock($1, hashtext($2))', [WORKSPACE_LOCK_NS, userId]);
      try {
        return await task();
      } finally {
        await qr.query('SELECT pg_advisory_unlock($1, hashtext($2))', [WORKSPACE_LOCK_NS, userId]);
      }
    } finally {
      await qr.release();
    }
  }
}
